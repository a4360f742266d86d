"""Code versions that name the same code: what the layout move left equal.

Until the federated half moved to ``fl_r2sp/fl/`` (commit 50ce0ce), a code version hashed
each source file's *path* with its AST (:func:`legacy_code_version`), so the move gave every
run recorded before it an "older" version. The version is now move-invariant
(:mod:`experiments.common.code_canon`), and :data:`ALIASES` records, for each version of the
legacy hash that committed records or local caches hold from the last pre-move tree, the
current version of the same code. Each entry names the tree it was computed on and holds only
if (both checked by ``tests/experiments/common/test_same_code.py``, which rebuilds the trees
from git):

* the legacy hash of that tree is the entry's old version, and
* the current hash of that tree equals the current hash of the moved tree (the layout
  commit): the move changed nothing a run computes.

The run caches (:func:`experiments.common.run_cache.cached_run`, the cluster items' runs)
reuse a run of an old version as a run of its current one, and the report counts it as the
code the item ran with. Versions older than the pre-move tree (records made before commit
1303bec) have no entry: their code differs from the current one in more than file names.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

__all__ = ["ALIASES", "Alias", "aliases_of", "legacy_code_version", "same_code"]


@dataclass(frozen=True)
class Alias:
    """The current version ``new`` of the code that the legacy hash called ``old``.

    Parameters
    ----------
    new : str
        Current (move-invariant) version of the same code.
    tree : str
        Commit whose ``fl_r2sp/`` the legacy hash gave ``old`` (abbreviated hash).
    skip : tuple of str
        Top-level folders of ``fl_r2sp`` left out (``("cluster",)`` for the FL items, ``()``
        for the cluster items).
    moved : str
        The layout commit whose tree has the current version ``new`` too.
    """

    new: str
    tree: str
    skip: tuple[str, ...]
    moved: str = "50ce0ce"


#: Legacy version -> its current version (the justification: :class:`Alias`).
ALIASES: MappingProxyType[str, Alias] = MappingProxyType(
    {
        # FL items, the last tree before the move (filter_rules_mid's 60 mid runs, 84a6fa7's
        # engine, which 1303bec kept unchanged).
        "c14c681b59": Alias(new="c28c6dcdae", tree="1303bec", skip=("cluster",)),
        # FL items, the moved tree under the legacy hash (runs cached between the move and
        # the move-invariant hash).
        "4dab2eefad": Alias(new="c28c6dcdae", tree="50ce0ce", skip=("cluster",)),
        # Cluster items (the whole engine), the same two trees.
        "48aab8d89c": Alias(new="cbce251a89", tree="1303bec", skip=()),
        "e27e6d2fbc": Alias(new="cbce251a89", tree="50ce0ce", skip=()),
    }
)


def aliases_of(version: str) -> tuple[str, ...]:
    """The legacy versions that name the code of ``version`` (sorted; empty for most)."""
    return tuple(sorted(old for old, alias in ALIASES.items() if alias.new == version))


def same_code(a: str, b: str) -> bool:
    """Whether versions ``a`` and ``b`` name the same code (equal, or one an alias of the
    other's, or both aliases of one version)."""

    def current(v: str) -> str:
        alias = ALIASES.get(v)
        return alias.new if alias is not None else v

    return current(a) == current(b)


def legacy_code_version(root: Path, skip: tuple[str, ...], schema: int = 2) -> str:
    """The code version as computed before the move-invariant hash: each ``*.py`` under
    ``root`` by its path relative to ``root``, in path order, with its AST (docstrings
    dropped) and the run schema (``schema``, default 2, the schema of every legacy record)."""
    h = hashlib.sha256(f"schema {schema}\n".encode())
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in skip:
            continue
        h.update(f"{rel.as_posix()}\n".encode())
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
        h.update(ast.dump(tree, include_attributes=False).encode())
    return h.hexdigest()[:10]

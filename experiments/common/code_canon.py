"""The engine's sources in a form that a move of files does not change.

:func:`experiments.common.provenance.code_version` hashes what :func:`canonical_sources`
returns. A run's result depends on what the code does, not on where a file lives, so the
canonical form leaves out what a pure move (the federated half going to ``fl_r2sp/fl/``, old
names kept as shims by :mod:`fl_r2sp.moved`) changes and nothing else:

* each module is named by its *current* dotted name (:func:`fl_r2sp.moved.current_name`:
  ``fl_r2sp/strategies/bsp.py`` and ``fl_r2sp/fl/policies/bsp.py`` are both
  ``fl_r2sp.fl.policies.bsp``), and the modules are hashed in the order of those names;
* inside a module, imported module names and module names or file paths quoted in strings
  (help texts, lazy export tables) are current names too, and each run of consecutive
  import statements is sorted (a renamed import moves in the isort order);
* left out: the deprecation shims (modules that call ``deprecated_module``), the import
  machinery (:data:`MACHINERY`: :mod:`fl_r2sp.moved`, :mod:`fl_r2sp.lazy`) with the imports of
  it and the calls of ``current_name`` (the identity on current names, which is all the
  canonical form holds), and a package's export surface (an ``__init__.py`` holding only
  imports, name assignments and a module ``__getattr__`` / ``__dir__``): which names a package
  re-exports decides what ``import`` offers, never what a run computes;
* as before, docstrings, comments and layout do not count (the :mod:`ast` dump).

Any other edit, a changed line of a policy, a new module, gives another canonical form.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from fl_r2sp.moved import MOVED, current_name

__all__ = ["MACHINERY", "canonical_sources", "module_name", "normalised"]

#: Modules that only serve old names and lazy exports: never part of a run's code.
MACHINERY = frozenset({"fl_r2sp.moved", "fl_r2sp.lazy"})
#: Functions whose call marks a module as a deprecation shim.
_SHIM_CALL = "deprecated_module"
#: Functions a package ``__init__`` may define and still be export surface only.
_SURFACE_DEFS = frozenset({"__getattr__", "__dir__"})


def _name_patterns() -> list[tuple[re.Pattern[str], str]]:
    """(pattern, replacement) turning old module names and file paths in text into new ones."""
    out = []
    for old, new in MOVED.items():
        for sep in (".", "/"):
            o, n = old.replace(".", sep), new.replace(".", sep)
            # Not inside a longer identifier: fl_r2sp.config must not hit fl_r2sp.config_checks.
            out.append((re.compile(rf"(?<![\w.]){re.escape(o)}(?!\w)"), n))
    return out


_PATTERNS = _name_patterns()


def _current_text(text: str) -> str:
    for pattern, new in _PATTERNS:
        text = pattern.sub(new, text)
    return text


def module_name(rel: Path, package: str = "fl_r2sp") -> str:
    """Current dotted name of the module at ``rel`` (relative to the package folder)."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return current_name(".".join([package, *parts]))


class _Canon(ast.NodeTransformer):
    """Rewrites old names to current ones and drops the uses of the import machinery."""

    def visit_Import(self, node: ast.Import) -> ast.AST | None:
        for alias in node.names:
            alias.name = current_name(alias.name)
        node.names = [a for a in node.names if a.name not in MACHINERY]
        return node if node.names else None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        if node.module and node.level == 0:
            node.module = current_name(node.module)
            if node.module in MACHINERY:
                return None
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            node.value = _current_text(node.value)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "current_name" and len(node.args) == 1:
            return node.args[0]  # the identity on current names
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        self.generic_visit(node)
        # ``x = current_name(x)`` became ``x = x``: a no-op.
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
            and node.targets[0].id == node.value.id
        ):
            return None
        return node


def _sort_imports(tree: ast.AST) -> None:
    """Sort each run of consecutive import statements of every body (isort order is a name's)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            out: list[ast.stmt] = []
            run: list[ast.stmt] = []
            for stmt in [*body, None]:
                if isinstance(stmt, ast.Import | ast.ImportFrom):
                    run.append(stmt)
                    continue
                out += sorted(run, key=ast.dump)
                run = []
                if stmt is not None:
                    out.append(stmt)
            setattr(node, field, out)


def _drop_docstrings(tree: ast.AST) -> None:
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


def _is_shim(tree: ast.Module) -> bool:
    """Whether the module calls ``deprecated_module`` (an old name kept for one release)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == _SHIM_CALL:
                return True
    return False


def _is_surface(tree: ast.Module) -> bool:
    """Whether a package ``__init__`` only re-exports: imports, name assignments, a module
    ``__getattr__`` / ``__dir__`` (docstrings already dropped)."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
            continue
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            if all(isinstance(t, ast.Name) for t in flat):
                continue
        if isinstance(stmt, ast.FunctionDef) and stmt.name in _SURFACE_DEFS:
            continue
        return False
    return True


def normalised(source: str, init: bool = False) -> str | None:
    """The canonical text of one module's ``source``, or None when it is left out (a shim,
    or, with ``init`` True for a package ``__init__.py``, export surface only)."""
    tree = ast.parse(source)
    if _is_shim(tree):
        return None
    _drop_docstrings(tree)
    tree = _Canon().visit(tree)
    if init and _is_surface(tree):
        return None
    _sort_imports(tree)
    return ast.dump(tree, include_attributes=False)


def canonical_sources(root: Path, skip: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """``(current module name, canonical text)`` of each hashed module under ``root`` (the
    ``fl_r2sp`` package folder), in the order of the names; top-level folders ``skip`` and the
    modules left out (see the module docstring) are not yielded."""
    found: dict[str, str] = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[0] in skip:
            continue
        name = module_name(rel, root.name)
        if name in MACHINERY:
            continue
        text = normalised(path.read_text(), init=rel.name == "__init__.py")
        if text is None:
            continue
        if name in found:  # two files, one current name: an old module beside its new one
            raise ValueError(f"{rel}: a second module named {name} under {root}")
        found[name] = text
    yield from sorted(found.items())

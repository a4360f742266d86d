"""Every package of ``fl_r2sp`` states its public names in ``__all__``.

A package with a public surface lists it (literally, or as its lazy ``EXPORTS`` table); a
package that only namespaces its modules says so in its docstring and has an explicit empty
``__all__``; a deprecation shim has none of its own, since its ``__getattr__`` serves the new
package's. Read from the source (no imports), except that every lazily exported name is
resolved once.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from fl_r2sp.moved import MOVED
from tests.paths import REPO

PACKAGE = REPO / "fl_r2sp"
INITS = sorted(PACKAGE.rglob("__init__.py"))
#: The sentence a namespace-only package's docstring carries.
NAMESPACE = "only namespaces its modules"


def _name(path: Path, root: Path = REPO) -> str:
    return ".".join(path.parent.relative_to(root).parts)


def _all_node(tree: ast.Module) -> ast.expr | None:
    """The value assigned to ``__all__`` at module level, or None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return node.value
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "__all__":
            return node.value
    return None


def _bound(tree: ast.Module) -> set[str]:
    """Names bound at module level (imports, definitions, assignments)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _exports_table(tree: ast.Module) -> list[str]:
    """The keys of the module's literal ``EXPORTS`` dict."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "EXPORTS":
            assert isinstance(node.value, ast.Dict)
            return [ast.literal_eval(k) for k in node.value.keys]
    raise AssertionError("__all__ = list(EXPORTS) without a literal EXPORTS table")


def public_names(path: Path, root: Path = REPO) -> list[str] | None:
    """The names ``path``'s ``__all__`` lists (``root``: the folder above the package); None
    for a deprecation shim (checked: no ``__all__`` of its own). Fails when a package states
    nothing."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    value = _all_node(tree)
    if _name(path, root) in MOVED:
        assert value is None, f"{path}: a shim serves the new package's __all__, not its own"
        return None
    assert value is not None, f"{path}: no __all__ (list the public names, or [] for none)"
    if ast.unparse(value) == "list(EXPORTS)":
        return _exports_table(tree)
    names = ast.literal_eval(value)
    assert isinstance(names, list) and all(isinstance(n, str) for n in names), path
    if not names:
        doc = ast.get_docstring(tree) or ""
        assert NAMESPACE in doc, f"{path}: an empty __all__ needs the sentence '{NAMESPACE}'"
    missing = set(names) - _bound(tree)
    assert not missing, f"{path}: __all__ names {sorted(missing)} that it does not define"
    return names


@pytest.mark.parametrize("path", INITS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_package_states_its_public_names(path: Path) -> None:
    names = public_names(path)
    if names is not None:
        assert len(set(names)) == len(names), f"{path}: a name twice in __all__"


def test_every_lazily_exported_name_resolves() -> None:
    lazy = [p for p in INITS if "list(EXPORTS)" in p.read_text(encoding="utf-8")]
    assert {_name(p) for p in lazy} >= {"fl_r2sp", "fl_r2sp.fl", "fl_r2sp.fl.policies"}
    for path in lazy:
        module = importlib.import_module(_name(path))
        for name in public_names(path) or []:
            assert getattr(module, name) is not None, f"{_name(path)}.{name}"


def test_the_checks_refuse_what_they_name(tmp_path: Path) -> None:
    def check(source: str) -> None:
        pkg = tmp_path / "fl_r2sp_probe" / "__init__.py"
        pkg.parent.mkdir(exist_ok=True)
        pkg.write_text(source, encoding="utf-8")
        public_names(pkg, tmp_path)

    with pytest.raises(AssertionError, match="no __all__"):
        check('"""A package."""\n')
    with pytest.raises(AssertionError, match="needs the sentence"):
        check('"""A package."""\n__all__: list[str] = []\n')
    with pytest.raises(AssertionError, match=r"\['g'\]"):
        check('"""A package."""\nfrom x import f\n__all__ = ["f", "g"]\n')
    check(f'"""A package; it {NAMESPACE}."""\n__all__: list[str] = []\n')
    check('"""A package."""\nEXPORTS = {"f": "x"}\n__all__ = list(EXPORTS)\n')

"""The package layout: no import cycle between modules, no private import, Flower-free policies.

The import graph is built statically (``ast`` over every ``.py`` file of a
package, imports inside functions and under ``TYPE_CHECKING`` included,
relative imports resolved). Each import is resolved to the *module* it names:

* ``import a.b.c`` -> the longest prefix of ``a.b.c`` that is a module;
* ``from pkg import name`` -> ``pkg.name`` when that is a module (a
  submodule), else ``pkg`` itself (the module that defines or re-exports
  ``name``).

**How a package's ``__init__`` counts.** It is the module named after the
package, with the edges it writes itself. Importing ``pkg.sub`` is an edge to
``pkg.sub`` only: Python runs ``pkg/__init__.py`` first, but that implicit
parent import is not an edge, since an ``__init__`` that re-exports its
submodules would otherwise form a cycle with every one of them. Importing a
*name* from ``pkg`` (not a submodule) is an edge to ``pkg``: a submodule that
does so while ``pkg/__init__`` imports it is a real cycle (it sees a half
initialised package).

What is checked, for ``fl_r2sp`` and ``experiments``:

* **no cycle between modules**: each strongly connected set of modules is
  reported with one cycle through it and the import lines that make it;
* **no private name imported across modules**: ``from m import _x`` where
  ``m`` is a project module and ``_x`` is not one of its submodules
  (``__future__`` and dunder names excluded); a private *module*
  (``pkg/_m.py``) may be imported only from inside ``pkg``;
* for ``fl_r2sp`` also, at the level of *units* (a subpackage such as
  ``fl_r2sp.fl.server`` or a top-level module such as ``fl_r2sp.fl.config``): no
  cycle between units and no import against the layers; and the policy
  modules import no Flower, torch, clock or global RNG, directly or through
  other ``fl_r2sp`` modules.

One edge is allowed by name (:data:`ALLOWED_LAZY`): the lazy re-export of the
Flower classes in ``fl_r2sp/fl/policies/__init__.py`` (inside its module
``__getattr__``, PEP 562, which runs only when a user asks for ``FLR2SP`` &
co.); a fresh interpreter checks that it stays lazy.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fl_r2sp"
#: The packages held to the module-level rules (cycles, private imports).
CHECKED = ("fl_r2sp", "experiments")

#: Modules the policies must not import (directly or through fl_r2sp modules):
#: the policies are plain decisions over NumPy vectors, with no Flower, no
#: torch, no wall-clock reads and no global RNG.
POLICY_FORBIDDEN = frozenset({"flwr", "torch", "time", "random"})

#: No edge is exempt from the rules (kept as a parameter of the graph builders, which the
#: checker's own tests exercise).
ALLOWED_LAZY: set[tuple[str, str | None, str]] = set()

#: The federated half's units, bottom up: its protocol, the policies (and their parameter
#: records), config (RunConfig, which reads the records and the scheme registry), clients,
#: server, flower, and the ``fl`` package itself (its public surface, on top).
_FL = ("fl.protocol", "fl.policies", "fl.config", "fl.clients", "fl.server", "fl.flower", "fl")
#: The shared blocks both halves build on (and the package's own plumbing).
_SHARED = ("datasets", "models", "training", "emulation", "telemetry", "lazy", "moved")

#: Unit -> units it must never import. The shared blocks import neither half; the federated
#: units only those below them (and no cluster); cluster no federated unit. A back edge is a
#: cycle in waiting. The top package ``fl_r2sp`` (the public API) sits above everything.
FORBIDDEN_EDGES: Mapping[str, frozenset[str]] = {
    **{leaf: frozenset({*_FL, "cluster"}) for leaf in _SHARED},
    **{unit: frozenset({*_FL[i + 1 :], "cluster"}) for i, unit in enumerate(_FL)},
    "cluster": frozenset(_FL),
}

#: The federated modules' names before the move: now shims and nothing else.
OLD_FL = ("strategies", "server", "clients", "flower", "config", "config_checks", "protocol")


@dataclass(frozen=True)
class Edge:
    """One imported module or name: module ``src`` imports (from) module ``dst``."""

    src: str
    dst: str  # the module, resolved as the module docstring says (outside modules: as written)
    file: str
    line: int
    function: str | None  # innermost enclosing function, None at module level, "EXPORTS" lazy
    name: str | None = None  # the name of ``from dst import name``; None for ``import dst``


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of ``path`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _owner(name: str, modules: frozenset[str]) -> str:
    """The longest prefix of ``name`` in ``modules``; ``name`` itself outside them."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return name


def imports_in(path: Path, root: Path, modules: frozenset[str] = frozenset()) -> list[Edge]:
    """Every import in ``path`` (module level and inside functions), as resolved edges.

    ``modules`` are the known module names (see the module docstring for how an
    import resolves to one of them).
    """
    module = module_name(path, root)
    rel = path.relative_to(root).as_posix()
    is_package = path.name == "__init__.py"
    edges: list[Edge] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                else function
            )
            if isinstance(child, ast.Import):
                edges.extend(
                    Edge(module, _owner(a.name, modules), rel, child.lineno, function)
                    for a in child.names
                )
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(child, module, is_package)
                for a in child.names:
                    sub = f"{target}.{a.name}"
                    dst = sub if sub in modules else _owner(target, modules)
                    name = None if sub in modules or a.name == "*" else a.name
                    edges.append(Edge(module, dst, rel, child.lineno, function, name))
            visit(child, inner)

    tree = ast.parse(path.read_text(), filename=str(path))
    visit(tree, None)
    edges.extend(_export_edges(tree, module, rel, modules))
    return edges


def _export_edges(tree: ast.Module, module: str, rel: str, modules: frozenset[str]) -> list[Edge]:
    """The lazy export table ``EXPORTS = {name: "module", ...}`` at module level, as edges
    (``function="EXPORTS"``): each name's module is imported when the name is asked for."""
    edges = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and target.id == "EXPORTS"):
            continue
        if not isinstance(value, ast.Dict):
            continue
        for v in value.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                dst = _owner(v.value, modules)
                edges.append(Edge(module, dst, rel, v.lineno, "EXPORTS", None))
    return edges


def modules_in(package: Path) -> frozenset[str]:
    """Dotted names of every module of ``package`` (a directory with ``__init__.py``)."""
    return frozenset(module_name(f, package.parent) for f in package.rglob("*.py"))


def all_edges(package: Path) -> list[Edge]:
    """Import edges of every module of ``package``, resolved against its modules."""
    modules = modules_in(package)
    return [
        e for f in sorted(package.rglob("*.py")) for e in imports_in(f, package.parent, modules)
    ]


@functools.cache
def package_edges(package: str) -> tuple[Edge, ...]:
    """:func:`all_edges` of a package of the repository (parsed once per test session)."""
    return tuple(all_edges(ROOT / package))


def repo_edges() -> tuple[Edge, ...]:
    """:func:`all_edges` of ``fl_r2sp``."""
    return package_edges("fl_r2sp")


def module_graph(
    edges: Iterable[Edge], modules: frozenset[str], allowed: set[tuple[str, str, str]]
) -> dict[str, dict[str, list[Edge]]]:
    """Module -> imported module of ``modules`` -> its edges (self-edges, ``allowed`` dropped)."""
    graph: dict[str, dict[str, list[Edge]]] = {}
    for e in edges:
        if e.dst not in modules or e.dst == e.src or (e.file, e.function, e.dst) in allowed:
            continue
        graph.setdefault(e.src, {}).setdefault(e.dst, []).append(e)
    return graph


def unit_of(module: str, package: str) -> str | None:
    """``pkg.cluster.x`` -> ``cluster``, ``pkg.fl.server.runner`` -> ``fl.server`` (the
    federated half's packages are units of their own), ``pkg.fl`` -> ``fl``; None outside
    ``package`` or for the package itself."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != package:
        return None
    if parts[1] == "fl" and len(parts) > 2:
        return f"fl.{parts[2]}"
    return parts[1]


def unit_graph(
    edges: Iterable[Edge], package: str, allowed: set[tuple[str, str, str]]
) -> dict[str, dict[str, list[Edge]]]:
    """Unit -> imported unit -> the edges that import it (self-edges and ``allowed`` dropped)."""
    graph: dict[str, dict[str, list[Edge]]] = {}
    for e in edges:
        src, dst = unit_of(e.src, package), unit_of(e.dst, package)
        if src is None or dst is None or src == dst or (e.file, e.function, e.dst) in allowed:
            continue
        graph.setdefault(src, {}).setdefault(dst, []).append(e)
    return graph


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle ``[a, b, ..., a]`` of ``graph`` (depth-first, sorted order), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := dfs(nxt)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := dfs(start)) is not None:
            return found
    return None


def tangles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected sets of two or more nodes of ``graph``, each sorted.

    Every cycle of the graph lies inside one of them; none means no cycle.
    """
    reach: dict[str, set[str]] = {}
    for start in graph:  # the graphs here have a few hundred nodes: plain search is enough
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        reach[start] = seen
    groups = {frozenset(b for b in reach[a] if a in reach.get(b, ())) | {a} for a in reach}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def cycle_report(graph: Mapping[str, Mapping[str, list[Edge]]]) -> list[str]:
    """For each tangle of ``graph``: its members and one cycle through it, line by line."""
    out = []
    for group in tangles(graph):
        inside = {a: [b for b in graph.get(a, {}) if b in group] for a in group}
        cycle = find_cycle(inside)
        assert cycle is not None  # a strongly connected set holds a cycle
        out.append(
            f"{len(group)} modules in a tangle: {', '.join(group)}\n{describe(cycle, graph)}"
        )
    return out


def describe(cycle: list[str], graph: Mapping[str, Mapping[str, list[Edge]]]) -> str:
    """The cycle with one import line per step."""
    steps = []
    for a, b in itertools.pairwise(cycle):
        e = graph[a][b][0]
        where = f" (in {e.function})" if e.function else ""
        steps.append(f"  {a} -> {b}: {e.file}:{e.line}{where} imports {e.dst}")
    return "import cycle " + " -> ".join(cycle) + "\n" + "\n".join(steps)


def private_imports(edges: Iterable[Edge], project: frozenset[str]) -> list[str]:
    """Imports of a private name, or of a private module from outside its package.

    Parameters
    ----------
    edges : iterable of Edge
        Resolved import edges.
    project : frozenset of str
        The top-level names of the project's packages; other imports are not checked.
    """
    bad = []
    for e in edges:
        if e.dst.split(".")[0] not in project:
            continue
        where = f"{e.file}:{e.line}"
        if e.name and _private(e.name) and e.dst != e.src:
            bad.append(f"{where} imports the private name {e.name} of {e.dst}")
        parts = e.dst.split(".")
        for i, part in enumerate(parts):
            home = ".".join(parts[:i])
            if _private(part) and not (e.src + ".").startswith(home + "."):
                bad.append(f"{where} imports the private module {e.dst} from outside {home}")
    return bad


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def policy_files() -> list[Path]:
    """The plain-Python policy modules: ``fl/policies/*`` and the cluster policies."""
    files = sorted((PACKAGE / "fl" / "policies").glob("*.py"))
    return files + sorted((PACKAGE / "cluster" / "policies").rglob("*.py"))


# --------------------------------------------------------------------- static tests
def test_no_import_cycle_between_subpackages() -> None:
    graph = unit_graph(repo_edges(), "fl_r2sp", ALLOWED_LAZY)
    assert {"fl.config", "fl.clients", "fl.server", "fl.flower"} <= set(graph)  # not empty
    cycle = find_cycle(graph)
    assert cycle is None, describe(cycle, graph)


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_cycle_between_modules(package: str) -> None:
    graph = module_graph(package_edges(package), modules_in(ROOT / package), ALLOWED_LAZY)
    assert len(graph) >= 10  # the graph is not empty
    report = cycle_report(graph)
    assert not report, "\n\n".join(report)


@pytest.mark.parametrize("package", CHECKED)
def test_no_private_name_imported_across_modules(package: str) -> None:
    bad = private_imports(package_edges(package), frozenset(CHECKED))
    assert not bad, "private names imported across modules:\n" + "\n".join(sorted(set(bad)))


def test_no_import_against_the_layers() -> None:
    graph = unit_graph(repo_edges(), "fl_r2sp", ALLOWED_LAZY)
    bad = [
        f"{e.file}:{e.line} ({src} -> {dst})"
        for src, targets in graph.items()
        for dst, es in targets.items()
        if dst in FORBIDDEN_EDGES.get(src, ())
        for e in es
    ]
    assert not bad, "imports against the layers:\n" + "\n".join(sorted(set(bad)))


#: Cluster mode's modules above its runtime: the scheme table and what reads it.
CLUSTER_ABOVE_RUNTIME = frozenset(
    f"fl_r2sp.cluster.{m}" for m in ("schemes", "cli", "rank", "launcher", "local", "api")
)


def test_the_cluster_runtime_imports_nothing_above_it() -> None:
    bad = [
        f"{e.file}:{e.line} imports {e.dst}"
        for e in repo_edges()
        if e.src.startswith("fl_r2sp.cluster.runtime.")
        and e.src != "fl_r2sp.cluster.runtime.rank"  # the deprecation shim of the old entry
        and e.dst in CLUSTER_ABOVE_RUNTIME
    ]
    assert not bad, "cluster runtime modules importing the layer above:\n" + "\n".join(bad)


def test_lazy_export_tables_are_read_as_edges() -> None:
    edges = [e for e in repo_edges() if e.src == "fl_r2sp" and e.function == "EXPORTS"]
    assert {e.dst for e in edges} >= {"fl_r2sp.fl.flower.strategy", "fl_r2sp.fl.config"}


def test_the_federated_half_left_only_shims_at_the_top() -> None:
    shim = "from fl_r2sp.moved import deprecated_module"
    for name in OLD_FL:
        folder = PACKAGE / name
        files = sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{name}.py"]
        assert [f.name for f in files] == (["__init__.py"] if folder.is_dir() else [f"{name}.py"])
        text = files[0].read_text()
        assert shim in text and "__getattr__ = deprecated_module(__name__" in text, files[0]
        assert all(e.dst == "fl_r2sp.moved" for e in imports_in(files[0], ROOT)), files[0]
    units = {unit_of(module_name(f, ROOT), "fl_r2sp") for f in PACKAGE.rglob("*.py")}
    assert set(OLD_FL) <= units and {"fl.policies", "fl.server", "fl.flower"} <= units


def test_policy_modules_import_no_flower_torch_clock_or_global_rng() -> None:
    edges = repo_edges()
    by_module: dict[str, list[Edge]] = {}
    for e in edges:
        by_module.setdefault(e.src, []).append(e)
    bad = []
    for path in policy_files():
        start = module_name(path, ROOT)
        seen, todo = {start}, [start]
        while todo:  # follow fl_r2sp imports: a helper importing torch taints the policy too
            mod = todo.pop()
            for e in by_module.get(mod, []):
                if (e.file, e.function, e.dst) in ALLOWED_LAZY:
                    continue
                if e.dst.split(".")[0] in POLICY_FORBIDDEN:
                    bad.append(f"{start}: {e.file}:{e.line} imports {e.dst}")
                elif e.dst in by_module and e.dst not in seen:
                    seen.add(e.dst)
                    todo.append(e.dst)
    assert len(policy_files()) >= 10
    assert not bad, "policy modules must stay plain Python:\n" + "\n".join(sorted(set(bad)))


# ------------------------------------------------------------ the checker has teeth
def test_find_cycle_reports_a_cycle_and_accepts_a_dag() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b"], "b": ["c"], "d": ["a", "c"]}) is None
    assert find_cycle({"x": ["x"]}) == ["x", "x"]


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_checker_finds_a_cycle_hidden_in_a_function_and_a_relative_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "def f():\n    from ..high import b\n    return b\n",
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "from pkg.low.a import f\n",
            "pkg/other.py": "import numpy\n",
        },
    )
    graph = unit_graph(all_edges(tmp_path / "pkg"), "pkg", set())
    cycle = find_cycle(graph)
    assert cycle == ["high", "low", "high"]
    text = describe(cycle, graph)
    assert "pkg/high/b.py:1 imports pkg.low.a" in text and "pkg/low/a.py:2" in text
    # The same edge, declared lazy, is no longer a cycle.
    assert (
        find_cycle(
            unit_graph(all_edges(tmp_path / "pkg"), "pkg", {("pkg/low/a.py", "f", "pkg.high.b")})
        )
        is None
    )


def test_module_checker_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            # A package __init__ that re-exports its submodules is no cycle with them ...
            "pkg/__init__.py": "from pkg.a import f\nfrom pkg.c import g\n",
            "pkg/a.py": "def f():\n    from . import b\n    return b\n",
            "pkg/b.py": "from pkg.a import f\n",
            # ... but a submodule importing a name from the package that imports it is one.
            "pkg/c.py": "def g():\n    return 1\n",
            "pkg/d.py": "from pkg import f\n",
        },
    )
    modules = modules_in(tmp_path / "pkg")
    assert modules == {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"}
    graph = module_graph(all_edges(tmp_path / "pkg"), modules, set())
    report = cycle_report(graph)
    assert len(report) == 1 and report[0].startswith("2 modules in a tangle: pkg.a, pkg.b")
    assert "pkg/a.py:2 (in f) imports pkg.b" in report[0] and "pkg/b.py:1" in report[0]
    (tmp_path / "pkg/c.py").write_text("from pkg import f\n\n\ndef g():\n    return f\n")
    report = cycle_report(module_graph(all_edges(tmp_path / "pkg"), modules, set()))
    assert len(report) == 2 and report[0].startswith("2 modules in a tangle: pkg, pkg.c\n")
    # The function-level edge, declared lazy, is no longer a cycle.
    allowed = {("pkg/a.py", "f", "pkg.b")}
    assert len(cycle_report(module_graph(all_edges(tmp_path / "pkg"), modules, allowed))) == 1


def test_tangles_groups_every_module_of_a_cycle() -> None:
    graph = {"a": ["b"], "b": ["c", "d"], "c": ["a"], "d": ["e"], "e": ["d"], "f": ["a"]}
    assert tangles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert tangles({"a": ["b"], "b": ["c"]}) == []


def test_private_checker_finds_private_names_and_modules(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from __future__ import annotations\n_hidden = 1\nshown = 2\n",
            "pkg/b.py": "from pkg.a import __doc__, shown\n\n\ndef f():\n"
            "    from .a import _hidden\n",
            "pkg/sub/__init__.py": "from . import _impl\n",
            "pkg/sub/_impl.py": "y = 1\n",
            "pkg/sub/c.py": "from ._impl import y\nfrom pkg.sub._impl import y as z\n",
            "pkg/d.py": (
                "import numpy._core\nfrom pkg.sub._impl import y\nfrom pkg.sub import _impl\n"
            ),
        },
    )
    bad = private_imports(all_edges(tmp_path / "pkg"), frozenset({"pkg"}))
    assert bad == [
        "pkg/b.py:5 imports the private name _hidden of pkg.a",
        "pkg/d.py:2 imports the private module pkg.sub._impl from outside pkg.sub",
        "pkg/d.py:3 imports the private module pkg.sub._impl from outside pkg.sub",
    ]


def test_this_repository_with_one_more_import_would_fail() -> None:
    graph = unit_graph(repo_edges(), "fl_r2sp", ALLOWED_LAZY)
    assert find_cycle(graph) is None
    # What `from fl_r2sp.fl.server.runner import run` in a policy module would add:
    graph.setdefault("fl.policies", {})["fl.server"] = [
        Edge("fl_r2sp.fl.policies.x", "fl_r2sp.fl.server.runner", "x.py", 1, None)
    ]
    cycle = find_cycle(graph)
    assert cycle is not None and "fl.policies" in cycle and "fl.server" in cycle


# ------------------------------------------------------------ fresh interpreters
_PROBE = r"""
import importlib, json, pkgutil, sys
out = {}
import fl_r2sp.fl.policies as strategies
for info in pkgutil.iter_modules(strategies.__path__, "fl_r2sp.fl.policies."):
    importlib.import_module(info.name)
import fl_r2sp.cluster.policies.common.base
out["after_policies"] = sorted(m for m in ("flwr", "torch", "fl_r2sp.fl.flower")
                               if m in sys.modules)
import fl_r2sp
out["after_package"] = sorted(m for m in ("flwr", "torch") if m in sys.modules)
from fl_r2sp import FLR2SP, BSP, ASP, FedAsync, FedBuff
out["reexport"] = [c.__module__ + "." + c.__name__ for c in (FLR2SP, BSP, ASP, FedAsync, FedBuff)]
failures = {}
for group in json.loads(sys.argv[1]):
    for name in [n for n in sys.modules if n == "fl_r2sp" or n.startswith("fl_r2sp.")]:
        del sys.modules[name]
    for module in group:
        try:
            importlib.import_module(module)
        except Exception as exc:  # report every module, not just the first
            failures[module] = f"{type(exc).__name__}: {exc}"
out["failures"] = failures
print(json.dumps(out))
"""


def _groups() -> list[list[str]]:
    """Modules of fl_r2sp by unit; each unit is imported with no other fl_r2sp module loaded.

    One interpreter for all units (third-party imports such as torch stay
    loaded, which keeps this at a few seconds): between units every
    ``fl_r2sp`` module is dropped from ``sys.modules``, so a unit that only
    imports because another one was imported first fails here.
    """
    by_unit: dict[str, list[str]] = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        name = module_name(f, ROOT)
        by_unit.setdefault(unit_of(name, "fl_r2sp") or name, []).append(name)
    return [by_unit[u] for u in sorted(by_unit)]


@pytest.fixture(scope="module")
def probe() -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(_groups())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_policies_and_the_package_load_without_flower_or_torch(probe: dict) -> None:
    assert probe["after_policies"] == []
    assert probe["after_package"] == []


def test_public_import_gives_the_flower_classes(probe: dict) -> None:
    assert probe["reexport"] == [
        f"fl_r2sp.fl.flower.strategy.{n}" for n in ("FLR2SP", "BSP", "ASP", "FedAsync", "FedBuff")
    ]


def test_every_module_imports_in_isolation(probe: dict) -> None:
    assert probe["failures"] == {}

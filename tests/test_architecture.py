"""The package layout: no import cycle between subpackages, Flower-free policies.

The import graph is built statically (``ast`` over every ``.py`` file under
``fl_r2sp/``, imports inside functions included, relative imports resolved)
at the level of *units*: a subpackage (``fl_r2sp.server``) or a top-level
module (``fl_r2sp.config``, ``fl_r2sp.protocol``). A cycle between units
fails with the cycle and the import lines that make it. One edge is allowed
by name: the lazy re-export of the Flower classes in
``fl_r2sp/strategies/__init__.py`` (inside its module ``__getattr__``, which
runs only when a user asks for ``FLR2SP`` & co.); a fresh interpreter checks
that it stays lazy.
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

#: Modules the policies must not import (directly or through fl_r2sp modules):
#: the policies are plain decisions over NumPy vectors, with no Flower, no
#: torch, no wall-clock reads and no global RNG.
POLICY_FORBIDDEN = frozenset({"flwr", "torch", "time", "random"})

#: (file relative to the package's parent, function, target unit) of the one allowed back edge.
ALLOWED_LAZY = {("fl_r2sp/strategies/__init__.py", "__getattr__", "flower")}

#: Unit -> units it must never import. The layers, bottom up: the leaves (protocol, datasets,
#: models, training, emulation, telemetry); strategies (the policies and their parameter
#: records); config (RunConfig, which reads the records and the scheme registry); clients;
#: server; flower. cluster sits beside them on the leaves. A back edge is a cycle in waiting.
_LEAVES = ("protocol", "datasets", "models", "training", "emulation", "telemetry")
FORBIDDEN_EDGES: Mapping[str, frozenset[str]] = {
    **{
        leaf: frozenset({"strategies", "config", "clients", "server", "flower", "cluster"})
        for leaf in _LEAVES
    },
    "strategies": frozenset({"config", "clients", "server", "flower", "cluster"}),
    "config": frozenset({"clients", "server", "flower", "cluster"}),
    "clients": frozenset({"server", "flower", "cluster"}),
    "server": frozenset({"flower", "cluster"}),
    "cluster": frozenset({"strategies", "clients", "server", "flower"}),
}


@dataclass(frozen=True)
class Edge:
    """One import statement: ``src`` module imports ``dst`` module."""

    src: str
    dst: str
    file: str
    line: int
    function: str | None  # innermost enclosing function, None at module level


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


def imports_in(path: Path, root: Path) -> list[Edge]:
    """Every import in ``path`` (module level and inside functions), as edges."""
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
                edges.extend(Edge(module, a.name, rel, child.lineno, function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(child, module, is_package)
                # `from pkg import sub` may name a submodule: keep both candidates.
                edges.append(Edge(module, target, rel, child.lineno, function))
                edges.extend(
                    Edge(module, f"{target}.{a.name}", rel, child.lineno, function)
                    for a in child.names
                    if a.name != "*"
                )
            visit(child, inner)

    visit(ast.parse(path.read_text(), filename=str(path)), None)
    return edges


def all_edges(package: Path) -> list[Edge]:
    """Import edges of every module of ``package`` (a directory with ``__init__.py``)."""
    return [e for f in sorted(package.rglob("*.py")) for e in imports_in(f, package.parent)]


@functools.cache
def repo_edges() -> tuple[Edge, ...]:
    """:func:`all_edges` of ``fl_r2sp`` (parsed once per test session)."""
    return tuple(all_edges(PACKAGE))


def unit_of(module: str, package: str) -> str | None:
    """``pkg.server.runner`` -> ``server``; None outside ``package`` or for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package else None


def unit_graph(
    edges: Iterable[Edge], package: str, allowed: set[tuple[str, str, str]]
) -> dict[str, dict[str, list[Edge]]]:
    """Unit -> imported unit -> the edges that import it (self-edges and ``allowed`` dropped)."""
    graph: dict[str, dict[str, list[Edge]]] = {}
    for e in edges:
        src, dst = unit_of(e.src, package), unit_of(e.dst, package)
        if src is None or dst is None or src == dst or (e.file, e.function, dst) in allowed:
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


def describe(cycle: list[str], graph: Mapping[str, Mapping[str, list[Edge]]]) -> str:
    """The cycle with one import line per step."""
    steps = []
    for a, b in itertools.pairwise(cycle):
        e = graph[a][b][0]
        steps.append(f"  {a} -> {b}: {e.file}:{e.line} imports {e.dst}")
    return "import cycle " + " -> ".join(cycle) + "\n" + "\n".join(steps)


def policy_files() -> list[Path]:
    """The plain-Python policy modules: ``strategies/*`` but the re-export, cluster policies."""
    files = [f for f in sorted((PACKAGE / "strategies").glob("*.py")) if f.name != "__init__.py"]
    return files + sorted((PACKAGE / "cluster" / "policies").rglob("*.py"))


# --------------------------------------------------------------------- static tests
def test_no_import_cycle_between_subpackages() -> None:
    graph = unit_graph(repo_edges(), "fl_r2sp", ALLOWED_LAZY)
    assert {"config", "clients", "server", "flower"} <= set(graph)  # the graph is not empty
    cycle = find_cycle(graph)
    assert cycle is None, describe(cycle, graph)


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


def test_the_lazy_reexport_is_the_only_edge_out_of_strategies_into_flower() -> None:
    edges = [
        e
        for e in repo_edges()
        if unit_of(e.src, "fl_r2sp") == "strategies" and unit_of(e.dst, "fl_r2sp") == "flower"
    ]
    assert edges, "the public re-export of the Flower classes is gone"
    assert {(e.file, e.function, "flower") for e in edges} <= ALLOWED_LAZY


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
                if (e.file, e.function, unit_of(e.dst, "fl_r2sp")) in ALLOWED_LAZY:
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
        find_cycle(unit_graph(all_edges(tmp_path / "pkg"), "pkg", {("pkg/low/a.py", "f", "high")}))
        is None
    )


def test_this_repository_with_one_more_import_would_fail() -> None:
    graph = unit_graph(repo_edges(), "fl_r2sp", ALLOWED_LAZY)
    assert find_cycle(graph) is None
    # What `from fl_r2sp.server.runner import run` in a policy module would add:
    graph.setdefault("strategies", {})["server"] = [
        Edge("fl_r2sp.strategies.x", "fl_r2sp.server.runner", "x.py", 1, None)
    ]
    cycle = find_cycle(graph)
    assert cycle is not None and "strategies" in cycle and "server" in cycle


# ------------------------------------------------------------ fresh interpreters
_PROBE = r"""
import importlib, json, pkgutil, sys
out = {}
import fl_r2sp.strategies as strategies
for info in pkgutil.iter_modules(strategies.__path__, "fl_r2sp.strategies."):
    importlib.import_module(info.name)
import fl_r2sp.cluster.policies.common.base
out["after_policies"] = sorted(m for m in ("flwr", "torch", "fl_r2sp.flower") if m in sys.modules)
from fl_r2sp.strategies import FLR2SP, BSP, ASP, FedAsync, FedBuff
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


def test_policies_load_without_flower_or_torch(probe: dict) -> None:
    assert probe["after_policies"] == []


def test_public_import_gives_the_flower_classes(probe: dict) -> None:
    assert probe["reexport"] == [
        f"fl_r2sp.flower.strategy.{n}" for n in ("FLR2SP", "BSP", "ASP", "FedAsync", "FedBuff")
    ]


def test_every_module_imports_in_isolation(probe: dict) -> None:
    assert probe["failures"] == {}

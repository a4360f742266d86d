"""A pure move of files keeps the code version; what the layout move left equal is recorded.

The synthetic trees below move a module the way the layout move did (``fl_r2sp/strategies``
-> ``fl_r2sp/fl/policies``, the old name kept as a shim); the alias table is checked against
the real trees, rebuilt from git.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from experiments.common import provenance, same_code
from experiments.common.run_cache import build_config, cached_run, config_key, parse_args
from tests.paths import REPO

_POLICY = (
    "from fl_r2sp.config import RunConfig\n"
    "import fl_r2sp.server.runner\n"
    "HELP = 'see fl_r2sp/strategies/bsp.py and fl_r2sp.strategies.registry'\n"
    "def step(x):\n    return x + 1\n"
)
_SHIM = "from fl_r2sp.moved import deprecated_module\n__getattr__ = deprecated_module(__name__)\n"


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _old(root: Path) -> Path:
    return _write(
        root / "fl_r2sp",
        {
            "strategies/__init__.py": "from typing import Any\nNAMES = ('BSP',)\n",
            "strategies/bsp.py": _POLICY,
            "config.py": "class RunConfig:\n    pass\n",
        },
    )


def _moved(root: Path, policy: str = _POLICY) -> Path:
    new = (
        policy.replace("fl_r2sp.config", "fl_r2sp.fl.config")
        .replace("fl_r2sp.server", "fl_r2sp.fl.server")
        .replace("fl_r2sp/strategies", "fl_r2sp/fl/policies")
        .replace("fl_r2sp.strategies", "fl_r2sp.fl.policies")
    )
    # A renamed import moves in the sorted order: swap the two imports, as ruff would.
    lines = new.splitlines(keepends=True)
    new = lines[1] + lines[0] + "".join(lines[2:])
    return _write(
        root / "fl_r2sp",
        {
            "__init__.py": "from fl_r2sp.lazy import lazy_exports\n"
            "EXPORTS = {'BSP': 'fl_r2sp.fl.policies.bsp'}\n"
            "__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)\n",
            "lazy.py": "def lazy_exports(package, table):\n    return None, None\n",
            "moved.py": "def current_name(m):\n    return m\n",
            "fl/__init__.py": "",
            "fl/policies/__init__.py": "EXPORTS = {'BSPPolicy': 'fl_r2sp.fl.policies.bsp'}\n",
            "fl/policies/bsp.py": new,
            "fl/config.py": "class RunConfig:\n    pass\n",
            "strategies/__init__.py": _SHIM,
            "config.py": _SHIM,
        },
    )


def test_a_pure_move_keeps_the_code_version(tmp_path: Path) -> None:
    old, moved = _old(tmp_path / "old"), _moved(tmp_path / "new")
    assert same_code.legacy_code_version(old, ()) != same_code.legacy_code_version(moved, ())
    assert provenance.code_version(old) == provenance.code_version(moved)


def test_an_edit_besides_the_move_changes_the_code_version(tmp_path: Path) -> None:
    old = _old(tmp_path / "old")
    edited = _moved(tmp_path / "new", _POLICY.replace("x + 1", "x + 2"))
    assert provenance.code_version(old) != provenance.code_version(edited)
    # A package __init__ that computes something is code, not export surface.
    busy = _old(tmp_path / "busy")
    (busy / "strategies" / "__init__.py").write_text("import os\nos.environ.setdefault('A', '1')\n")
    assert provenance.code_version(busy) != provenance.code_version(old)


def _tree_at(commit: str, dest: Path) -> Path:
    """``fl_r2sp/`` of ``commit``, extracted from the repository's history into ``dest``."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    got = subprocess.run(
        ["git", "archive", "--format=tar", commit, "fl_r2sp"],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    if got.returncode != 0:  # a shallow clone lacks the commit
        pytest.skip(f"commit {commit} is not in this checkout's history")
    dest.mkdir(parents=True)
    tar = dest / "tree.tar"
    tar.write_bytes(got.stdout)
    with tarfile.open(tar) as fh:
        fh.extractall(dest, filter="data")
    return dest / "fl_r2sp"


@pytest.mark.parametrize("old", sorted(same_code.ALIASES))
def test_each_alias_names_the_same_code_rebuilt_from_git(old: str, tmp_path: Path) -> None:
    alias = same_code.ALIASES[old]
    tree = _tree_at(alias.tree, tmp_path / "tree")
    moved = _tree_at(alias.moved, tmp_path / "moved")
    assert same_code.legacy_code_version(tree, alias.skip) == old
    assert provenance.code_version(tree, alias.skip) == alias.new
    assert provenance.code_version(moved, alias.skip) == alias.new


def test_the_committed_pre_move_records_are_covered() -> None:
    recorded = {
        json.loads(p.read_text())["code_version"]
        for p in (REPO / "records" / "results").glob("*/provenance.json")
    }
    assert "c14c681b59" in recorded and same_code.same_code("c14c681b59", "c28c6dcdae")
    assert not same_code.same_code("3a4663da18", "cbce251a89")  # older code: no alias


def test_the_cache_takes_a_run_of_an_aliased_version_as_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(provenance.REUSE_ENV, raising=False)
    monkeypatch.setattr(provenance, "code_version", lambda *a, **k: "c28c6dcdae")
    # The runs an item used are a module-level list: this test's fake run must not leak into
    # the provenance of items that later tests run in the same process.
    monkeypatch.setattr(provenance, "_USED", [])
    cfg = build_config("training", "smoke", 0, strategy="bsp", model="mlp")
    key = provenance.run_key(config_key(cfg), "c14c681b59")
    runs = tmp_path / "_runs"
    runs.mkdir()
    rec = {"label": "r-bsp", "seed": 0, "key": key, "config": cfg.to_run_config(),
           "summary": {}, "history": [], "code_version": "c14c681b59"}  # fmt: skip
    (runs / f"r-bsp-s0-{key}.json").write_text(json.dumps(rec))
    args = parse_args("fig15", None, ["--scale", "smoke", "--out", str(tmp_path)])
    got = cached_run(args, "training", "r-bsp", 0, cached_only=True, strategy="bsp", model="mlp")
    assert got is not None and got["code_version"] == "c14c681b59"
    item = tmp_path / "fig15"
    item.mkdir()
    prov = json.loads(provenance.write_provenance(item).read_text())
    assert next(r for r in prov["runs"] if r["label"] == "r-bsp")["current"] is True
    text = provenance.summarise(prov)
    assert "the code the item ran with, as `c14c681b59` before the layout move" in text

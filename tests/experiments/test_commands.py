"""Every command of experiments/README.md's item table starts, and the old flat names still run.

The FL-R²SP items also run end to end at smoke scale (:mod:`tests.experiments.flr2sp.test_smoke`);
here each command's ``--help`` is parsed in-process (a command without flags, such as the
DS-Sync twin, runs whole: it takes under a second).
"""

from __future__ import annotations

import importlib
import re
import runpy
import subprocess
import sys

import pytest

from experiments.moved import MOVED
from tests.paths import REPO

README = REPO / "experiments" / "README.md"
#: The cluster studies' runners of all their items; each item also has a command of its own.
RUNNERS = (
    "experiments.r2sp_cluster.twin.run",
    "experiments.r2sp_cluster.real.run",
    "experiments.selective.run",
)


def readme_commands() -> list[str]:
    """The modules of ``python -m ...`` in the README's item table, in order, once each."""
    table = README.read_text().split("## Every item", 1)[1].split("\n## ", 1)[0]
    return list(dict.fromkeys(re.findall(r"`python -m (experiments[\w.]*)", table)))


def test_the_item_table_lists_every_study() -> None:
    studies = {m.split(".")[1] for m in readme_commands()}
    assert {"flr2sp", "r2sp_cluster", "selective", "dssync", "osp", "report"} <= studies


@pytest.mark.parametrize("runner", RUNNERS)
def test_every_item_of_a_runner_has_its_own_command(runner: str) -> None:
    items = importlib.import_module(runner).ITEMS
    package = runner.rsplit(".", 1)[0]
    assert {f"{package}.{item}" for item in items} <= set(readme_commands())
    for item, fn in items.items():  # the item's module runs that item, not a copy of it
        assert fn.__module__ == f"{package}.{item}"


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")
@pytest.mark.parametrize("module", readme_commands())
def test_readme_command_starts(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        assert stop.code in (0, None)
        usage = capsys.readouterr().out
        assert "usage:" in usage
        if module.rsplit(".", 1)[0] in {r.rsplit(".", 1)[0] for r in RUNNERS}:
            assert ("--only" in usage) == (module in RUNNERS)  # an item's command runs it alone
    else:
        assert capsys.readouterr().out  # no flags: the command ran and printed its result


def test_importing_experiments_installs_no_import_hook() -> None:
    code = "import sys; n = len(sys.meta_path); import experiments; print(len(sys.meta_path) - n)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "0"


def test_old_command_runs_the_new_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "experiments.moved", "table4", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "experiments.table4 is now experiments.flr2sp.table4" in done.stderr
    assert "usage: python -m experiments.flr2sp.table4" in done.stdout


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_name_points_at_a_module(old: str) -> None:
    new = REPO / "experiments" / (MOVED[old].replace(".", "/") + ".py")
    assert new.is_file(), f"experiments.{old} -> {MOVED[old]} does not exist"
    assert not (REPO / "experiments" / f"{old}.py").exists()  # the old module is gone

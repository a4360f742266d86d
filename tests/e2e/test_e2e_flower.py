"""End to end through Flower's own CLI: ``flwr run .`` and the deployment script.

* the simulation writes a complete run directory;
* a virtual-clock run is the same with 1 or 2 simulation actors, and the
  same as the in-process runner: final weights bit for bit, accuracy and the
  application sequence (so Flower's scheduling does not leak into results);
* ``scripts/deploy_local.py`` runs a real SuperLink + 4 SuperNodes, wall
  clock, two rounds per group, for as long as it progresses
  (:mod:`tests.e2e.progress`: no wall budget, so a loaded machine only makes it slower).

Each ``flwr run`` takes ~30 s on 2 cores, the deployment ~1-2 min (idle machine).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.processes import (
    flwr_bin,
    local_superlink_env,
    local_superlink_pids,
    pids_matching,
    pids_with_env,
)
from fl_r2sp.fl.server.runner import run
from tests.e2e.progress import run_while_progressing
from tests.paths import REPO

pytestmark = pytest.mark.e2e

#: The small run every simulation test uses (keys as in pyproject.toml).
RUN = dict(
    num_partitions=6,
    num_groups=2,
    max_updates=4,
    eval_every=2,
    local_iterations=5,
    seed=3,
    plots=False,
)
#: Simulation resources giving 1 and 2 Ray actors whatever the machine's core count.
ONE_ACTOR = "num-supernodes=6 client-resources-num-cpus=1 init-args-num-cpus=1"
TWO_ACTORS = "num-supernodes=6 client-resources-num-cpus=1 init-args-num-cpus=2"


def run_config(run_dir: Path, **cfg: Any) -> str:
    """``--run-config`` string of ``cfg`` (snake_case keys) plus ``run-dir``."""
    items = {**cfg, "run_dir": str(run_dir)}
    return " ".join(f"{k.replace('_', '-')}={_toml(v)}" for k, v in items.items())


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"'{value}'" if isinstance(value, str) else repr(value)


def only_run_dir(run_dir: Path) -> Path:
    """The one run folder written under ``run_dir``."""
    found = [p for p in run_dir.iterdir() if p.is_dir()] if run_dir.is_dir() else []
    assert len(found) == 1, f"expected one run folder in {run_dir}, found {found}"
    return found[0]


def flwr_simulation(env: dict[str, str], run_dir: Path, federation: str) -> Path:
    """``flwr run .`` the small run; return its run folder."""
    cmd = [
        str(flwr_bin()),
        "run",
        str(REPO),
        "--stream",
        "--federation-config",
        federation,
        "--run-config",
        run_config(run_dir, **RUN),
    ]
    res = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "run directory:" in out, out[-3000:]
    return only_run_dir(run_dir)


def summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text())["summary"]


def group_applies(folder: Path) -> list[tuple[float, int]]:
    """(time, group) of every group application, in order."""
    rows = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    return [(r["time"], r["group"]) for r in rows if r["kind"] == "group_apply"]


def final_weights(folder: Path) -> tuple[str, tuple[int, ...], bytes]:
    """The run's final global model (``weights.npy``): dtype, shape and raw bytes."""
    import numpy as np

    w = np.load(folder / "weights.npy")
    return str(w.dtype), w.shape, w.tobytes()


@pytest.fixture(scope="module")
def sim_env(flwr_home: Path) -> dict[str, str]:
    """One environment (so one local SuperLink, on free ports) for the module's runs."""
    return local_superlink_env(flwr_home)


@pytest.fixture(scope="module")
def one_actor_run(sim_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return flwr_simulation(sim_env, tmp_path_factory.mktemp("runs-1-actor"), ONE_ACTOR)


def test_simulation_writes_run_directory(one_actor_run: Path, flwr_home: Path) -> None:
    # flwr run left its SuperLink running; the finder used by the teardown sees it.
    assert local_superlink_pids(flwr_home)
    s = summary(one_actor_run)
    assert 0.0 <= s["final_accuracy"] <= 1.0
    assert s["global_updates"] == RUN["max_updates"]
    for name in ("summary.json", "history.csv", "jobs.csv", "records.jsonl", "config.json"):
        assert (one_actor_run / name).is_file(), name
    with open(one_actor_run / "jobs.csv", newline="") as fh:
        jobs = list(csv.DictReader(fh))
    assert jobs and {int(j["cid"]) for j in jobs} <= set(range(RUN["num_partitions"]))
    config = json.loads((one_actor_run / "config.json").read_text())["config"]
    assert config["num-partitions"] == 6 and config["clock"] == "virtual"
    # 4 updates alternate over 2 groups in the fixed (strict) order.
    assert [g for _, g in group_applies(one_actor_run)] == [0, 1, 0, 1]


def test_actor_count_and_in_process_agree(
    one_actor_run: Path, sim_env: dict[str, str], tmp_path: Path
) -> None:
    two = flwr_simulation(sim_env, tmp_path / "runs-2-actors", TWO_ACTORS)
    local = run(RunConfig(**RUN, run_dir=str(tmp_path / "in-process")), progress=False).run_dir
    assert local is not None
    expected = group_applies(one_actor_run)
    assert len(expected) == RUN["max_updates"]
    weights = final_weights(one_actor_run)
    for other in (two, local):
        assert summary(other)["final_accuracy"] == summary(one_actor_run)["final_accuracy"]
        assert group_applies(other) == expected
        assert final_weights(other) == weights  # dtype, shape and every bit


def test_deploy_local_script(tmp_path: Path) -> None:
    home, runs = tmp_path / "deploy-home", tmp_path / "runs"
    overrides = run_config(
        runs,
        num_groups=2,
        max_updates=4,
        eval_every=2,
        local_iterations=5,
        delay="constant(value=0.05)",
        plots=False,
    )
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "deploy_local.py"),
        "--num-supernodes",
        "4",
        "--timeout",
        "0",  # no wall budget: the progress watch stops it if it stops progressing
        "--flwr-home",
        str(home),
        "--run-config",
        overrides,
    ]
    code, out = run_while_progressing(cmd, REPO)
    assert code == 0, out[-4000:]
    assert "status finished:completed at the SuperLink" in out
    folder = only_run_dir(runs)
    s = summary(folder)
    assert s["global_updates"] == 4 and 0.0 <= s["final_accuracy"] <= 1.0
    assert [g for _, g in group_applies(folder)] == [0, 1, 0, 1]  # two rounds per group
    config = json.loads((folder / "config.json").read_text())["config"]
    assert config["clock"] == "wall" and config["num-partitions"] == 4
    # Everything it started is gone: all were started with FLWR_HOME=<home>.
    assert not pids_with_env("FLWR_HOME", str(home.resolve()))
    assert not pids_matching(str(home.resolve()))


def test_bsp_equals_flowers_own_fedavg(sim_env: dict[str, str], tmp_path: Path) -> None:
    """C = 1, example-weighted mean, no delays, same seed: BSP's model is FedAvg's."""
    import numpy as np

    same = dict(
        RUN,
        num_groups=1,
        fraction=1.0,
        aggregation="weighted",
        delay="none",
        max_updates=3,
        eval_every=1,
    )
    cmd = [
        str(flwr_bin()),
        "run",
        str(REPO),
        "--stream",
        "--federation-config",
        ONE_ACTOR,
        "--run-config",
        run_config(tmp_path / "fedavg", strategy="fedavg", **same),
    ]
    res = subprocess.run(cmd, env=sim_env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    fedavg = np.load(only_run_dir(tmp_path / "fedavg") / "weights.npy")
    bsp = run(RunConfig(**same, strategy="bsp"), write=False, progress=False).weights
    assert fedavg.shape == bsp.shape
    # Same SGD seeds and data; only the order of float32 summation differs.
    np.testing.assert_allclose(bsp, fedavg, rtol=0, atol=1e-6)

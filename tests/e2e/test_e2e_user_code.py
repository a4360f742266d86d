"""A user's model and dataset by import path, through ``flwr run .`` (the project's apps).

* the run on the user's code equals the in-process runner's bit for bit;
* a path that breaks its contract: ``flwr run`` exits 0 (it does whatever the ServerApp
  does), so what the user gets is a failed run folder naming the path, and the log line.

The user's code is ``tests/e2e/user_nets.py``, inside the app's folder: Flower bundles it
with the app and the ServerApp and ClientApp processes import it from the bundle.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.processes import flwr_bin, local_superlink_env
from fl_r2sp.fl.server.runner import run
from tests.e2e.test_e2e_flower import final_weights, only_run_dir, run_config, summary
from tests.paths import REPO

pytestmark = pytest.mark.e2e

HERE = "tests.e2e.user_nets"
MODEL, DATA = f"{HERE}:build", f"{HERE}:load"

RUN = dict(
    model=MODEL,
    dataset=DATA,
    partitioner="iid",
    num_partitions=4,
    num_groups=2,
    max_updates=4,
    eval_every=2,
    local_iterations=3,
    lr=0.3,
    plots=False,
)


@pytest.fixture(scope="module")
def env(flwr_home: Path) -> dict[str, str]:
    return local_superlink_env(flwr_home)


def flwr_run(env: dict[str, str], run_dir: Path, **cfg: object) -> str:
    cmd = [str(flwr_bin()), "run", str(REPO), "--stream"]
    cmd += ["--federation-config", "num-supernodes=4 client-resources-num-cpus=1"]
    cmd += ["--run-config", run_config(run_dir, **{**RUN, **cfg})]
    res = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return res.stdout + res.stderr


def test_flwr_run_on_the_users_code_equals_the_in_process_runner(env, tmp_path: Path) -> None:
    flwr_run(env, tmp_path / "flwr")
    folder = only_run_dir(tmp_path / "flwr")
    assert summary(folder)["status"] == "completed", summary(folder).get("failure")
    local = run(RunConfig(**RUN, run_dir=str(tmp_path / "local")), progress=False)  # type: ignore[arg-type]
    assert local.run_dir is not None
    assert final_weights(folder) == final_weights(local.run_dir)
    assert summary(folder)["final_accuracy"] == summary(local.run_dir)["final_accuracy"]


def test_a_broken_path_under_flwr_run_leaves_a_failed_folder(env, tmp_path: Path) -> None:
    bad = f"{HERE}:wrong_logits"
    out = flwr_run(env, tmp_path, model=bad)
    folder = only_run_dir(tmp_path)
    failure = summary(folder)["failure"]
    assert summary(folder)["status"] == "failed" and failure.startswith(f"model '{bad}': ")
    assert "expected logits (2, 3)" in failure
    assert f"run failed before training: model '{bad}'" in out
    assert json.loads((folder / "config.json").read_text())["config"]["model"] == bad

"""End to end: kill the ServerApp of a real deployment after a checkpoint, resume, finish.

A SuperLink and two SuperNodes (insecure, loopback) keep running; the first ``flwr run`` has
``checkpoint-every=2``; once the checkpoint of update 2 is on disk the ``flwr-serverapp``
process is killed with SIGKILL; a second ``flwr run`` with ``resume-from=<run dir>``
continues it on the same nodes. The run directory must then hold every update (4) and a
complete history. About 2-4 minutes on 2 loaded cores.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from types import ModuleType

import pytest

from fl_r2sp.fl.flower.processes import (
    flower_env,
    free_ports,
    pids_matching,
    pids_with_env,
    start_group,
    stop_groups,
    wait_http_ok,
)
from fl_r2sp.telemetry.rundir import is_complete
from tests.paths import REPO

pytestmark = pytest.mark.e2e
NODES = 2


def load_deploy_script() -> ModuleType:
    path = REPO / "scripts" / "deploy_local.py"
    spec = importlib.util.spec_from_file_location("deploy_local", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise TimeoutError(f"no {what} within {timeout:.0f} s")


def checkpoint_at(runs: Path, version: int) -> Path | None:
    for note in runs.glob("*/checkpoint.json"):
        try:
            if json.loads(note.read_text())["version"] >= version:
                return note.parent
        except (ValueError, KeyError):  # never half-written (atomic), but be safe
            continue
    return None


def test_killed_serverapp_resumes_with_every_update_and_its_history(tmp_path: Path) -> None:
    deploy = load_deploy_script()
    home, runs, logs = tmp_path / "home", tmp_path / "runs", tmp_path / "logs"
    home.mkdir()
    logs.mkdir()
    env = flower_env(home)
    link, *ports = free_ports(1 + NODES)
    deploy.write_flower_config(home, link)
    overrides = {
        "clock": "wall", "num-partitions": NODES, "num-groups": 2, "max-updates": 4,
        "eval-every": 1, "local-iterations": 3, "plots": False,
        "delay": "constant(value=0.01)", "checkpoint-every": 2, "run-dir": str(runs),
    }  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []
    handles = []
    try:
        handles.append(open(logs / "superlink.log", "wb"))  # noqa: SIM115 (closed in finally)
        procs.append(
            start_group(deploy.superlink_cmd(link, home / "state.db"), env, REPO, handles[-1])
        )
        wait_http_ok(f"http://127.0.0.1:{link}/health", 90, procs[0])
        for i, port in enumerate(ports):
            handles.append(open(logs / f"supernode-{i}.log", "wb"))  # noqa: SIM115
            procs.append(
                start_group(deploy.supernode_cmd(link, port, i, NODES), env, REPO, handles[-1])
            )
        first = subprocess.Popen(
            deploy.flwr_run_cmd(REPO, overrides),
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        folder = wait_for(lambda: checkpoint_at(runs, 2), 400, "checkpoint of update 2")
        serverapps = wait_for(
            lambda: sorted(
                set(pids_matching("flwr-serverapp")) & set(pids_with_env("FLWR_HOME", str(home)))
            ),
            30,
            "flwr-serverapp process",
        )
        for pid in serverapps:
            os.kill(pid, signal.SIGKILL)
        out1, _ = first.communicate(timeout=180)
        assert not is_complete(folder), out1[-3000:]

        cmd = deploy.flwr_run_cmd(REPO, {**overrides, "resume-from": str(folder)})
        res = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=480)
        out2 = res.stdout + res.stderr
        assert res.returncode == 0, out2[-4000:]
        assert "resumed from" in out2 and "at update 2" in out2, out2[-4000:]
    finally:
        stop_groups(procs[1:])
        stop_groups(procs[:1])
        for handle in handles:
            handle.close()
    assert is_complete(folder)
    assert [p for p in runs.iterdir() if p.is_dir()] == [folder]  # the resumed run's own folder
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    assert summary["global_updates"] == 4 and summary["stopped"] == "reached max-updates=4"
    with open(folder / "history.csv") as fh:
        versions = [int(float(row["version"])) for row in csv.DictReader(fh)]
    assert versions == [0, 1, 2, 3, 4]
    with open(folder / "jobs.csv") as fh:
        applied = [row for row in csv.DictReader(fh) if row["push_end"]]
    assert len(applied) >= 4  # each update is one node's job (groups of one)
    assert not pids_with_env("FLWR_HOME", str(home.resolve()))

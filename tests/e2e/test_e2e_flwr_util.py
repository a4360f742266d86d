"""Fast checks of the process helpers and the deployment script's pieces (no Flower run)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from fl_r2sp.fl.flower.processes import (
    alive,
    descendants,
    flower_env,
    free_ports,
    pids_matching,
    pids_with_env,
    start_group,
    stop_group,
    stop_pids,
)
from tests.paths import REPO

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def load_deploy_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "deploy_local", REPO / "scripts" / "deploy_local.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(1024 <= p < 65536 for p in ports)


def test_flower_env_pins_home_and_path(tmp_path: Path) -> None:
    env = flower_env(tmp_path, {"FLWR_TELEMETRY_ENABLED": "1"})
    assert env["FLWR_HOME"] == str(tmp_path)
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert env["FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION"] == "1"
    assert env["FLWR_TELEMETRY_ENABLED"] == "1"  # extra entries win


@linux_only
def test_stop_group_stops_the_whole_tree(tmp_path: Path) -> None:
    env = {**os.environ, "FL_R2SP_TEST": str(tmp_path)}
    # A shell whose child sleeps: the child must die with the group leader.
    proc = start_group(["sh", "-c", "sleep 300 & wait"], env=env)
    wait_for(lambda: len(pids_with_env("FL_R2SP_TEST", str(tmp_path))) == 2)
    (child,) = descendants([proc.pid])
    stop_group(proc, grace=2.0)
    assert proc.returncode is not None
    assert not alive([proc.pid, child])
    assert not pids_with_env("FL_R2SP_TEST", str(tmp_path))


@linux_only
def test_stop_pids_kills_what_ignores_sigterm() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(300)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    assert stop_pids([proc.pid], grace=0.3) == []
    assert proc.wait(timeout=5) == -9


@linux_only
def test_pids_matching_whole_args() -> None:
    token = f"fl-r2sp-{os.getpid()}-123"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", token])
    try:
        wait_for(lambda: proc.pid in pids_matching(token))
        assert proc.pid in pids_matching(token[:-1])  # plain substring
        assert proc.pid not in pids_matching(token[:-1], whole_args=True)
        assert proc.pid in pids_matching(f"time.sleep(300) {token}", whole_args=True)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # typer, imported by flwr.cli
def test_deploy_commands_and_flower_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deploy = load_deploy_script()
    assert deploy.supernode_cmd(9091, 9100, 2, 4)[1:] == [
        "--insecure",
        "--superlink",
        "127.0.0.1:9091",
        "--host",
        "127.0.0.1",
        "--port",
        "9100",
        "--node-config",
        "partition-id=2 num-partitions=4",
    ]
    link = deploy.superlink_cmd(9091, tmp_path / "state.db")
    assert link[link.index("--port") + 1] == "9091" and "--insecure" in link
    run = deploy.flwr_run_cmd(REPO, {"clock": "wall", "num-partitions": 4, "max-updates": 2})
    assert run[1:5] == ["run", str(REPO), "deployment", "--stream"]
    # One --run-config: Flower refuses a key given twice, the callers merge theirs first.
    assert run[-2:] == ["--run-config", "clock='wall' num-partitions=4 max-updates=2"]
    # flwr itself reads the connection we write.
    from flwr.cli.flower_config import read_superlink_connection

    deploy.write_flower_config(tmp_path, 9091)
    monkeypatch.setenv("FLWR_HOME", str(tmp_path))
    conn = read_superlink_connection()
    assert conn.name == "deployment" and conn.address == "127.0.0.1:9091" and conn.insecure


def test_deploy_args_are_validated(tmp_path: Path) -> None:
    deploy = load_deploy_script()
    assert deploy.parse_args([]).num_supernodes == 4
    with pytest.raises(SystemExit):
        deploy.parse_args(["--num-supernodes", "0"])
    with pytest.raises(SystemExit):
        deploy.parse_args(["--app", str(tmp_path)])  # no pyproject.toml there

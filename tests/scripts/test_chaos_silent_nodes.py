"""``scripts/chaos.py`` restarts a SuperNode the ServerApp reports silent, as an operator would.

Stand-in SuperNodes are ``sleep`` processes in their own process groups; their logs hold the
node ids a real SuperNode logs (partition 1's node was restarted once: 7, then 111).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scripts.test_chaos_report import load_chaos

SILENT = "WARNING fl_r2sp: node {} is silent: {} partition queries unanswered, the latest for 121 s"


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "600"], start_new_session=True)


@pytest.fixture
def procs() -> Iterator[dict[int, Any]]:
    nodes = {0: sleeper(), 1: sleeper()}
    started = list(nodes.values())
    yield nodes
    for proc in [*started, *nodes.values()]:
        proc.kill()
        proc.wait()


def test_a_node_reported_silent_twice_is_restarted_once(tmp_path: Path, procs: dict) -> None:
    chaos = load_chaos()
    (tmp_path / "supernode-0.log").write_bytes(b"\x1b[92mINFO \x1b[0m: SuperNode ID: 100\n")
    (tmp_path / "supernode-1.log").write_bytes(b"SuperNode ID: 7\n...\nSuperNode ID: 111\n")
    assert chaos.node_partitions(tmp_path, 2) == {100: 0, 111: 1}
    args = chaos.parse_args(["--num-supernodes", "2"])  # --restart-silent 2
    started: list[int] = []

    def start_node(pid: int) -> subprocess.Popen[bytes]:
        started.append(pid)
        return sleeper()

    old = procs[1]
    c = chaos.Chaos(args, start_node, procs, tmp_path)
    c.restart_silent([SILENT.format(111, 1), "INFO fl_r2sp: update 1", SILENT.format(100, 1)])
    assert started == [] and old.poll() is None  # one unanswered query: not yet
    # Twice: restarted; its old id (7), an unknown one and a repeated report are left alone.
    c.restart_silent([SILENT.format(111, 2), SILENT.format(7, 3), SILENT.format(999, 2)])
    c.restart_silent([SILENT.format(111, 3)])
    assert started == [1] and c.silent_restarts == 1 and c.kills == 0
    assert old.wait(timeout=30) == -15  # stopped with SIGTERM
    assert procs[1] is not old and procs[0].poll() is None

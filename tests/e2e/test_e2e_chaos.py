"""End to end: 8 real SuperNodes, two killed and restarted mid-run, two hostile clients.

``scripts/chaos.py`` on loopback (its own SuperLink on free ports, a temporary
``FLWR_HOME``): FL-R²SP with 2 groups of 4 at C = 0.75 on the wall clock, partition 1 sending
1e30 and partition 2 its honest delta x1000 in every update; two SuperNodes are stopped
(SIGTERM) and restarted with the same partition id while the run trains. Checked from the
run folder: the run completes; both hostile clients are rejected by admission (norm) and no
other client is; the ledger counts every rejection; no gap between global updates is longer
than 2x the median group round time; each restarted node answers a job within its group's
next two applications (or before the run's end if fewer followed). The run stops after 8
global updates, not after a time budget, and the test waits for as long as updates come
(:mod:`tests.e2e.progress`): on an overloaded machine (load average ~28 on 2 cores) a group
round took 45-70 s, and a 180 s budget made only 2 global updates. About 4-5 minutes idle.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fl_r2sp.fl.flower.object_wait import OBJECT_WAIT
from tests.e2e.progress import run_while_progressing
from tests.paths import REPO
from tests.scripts.test_chaos_report import load_chaos

pytestmark = pytest.mark.e2e

#: Global updates the run makes (the stop rule: a count, not a time, so a loaded machine only
#: makes the run slower).
UPDATES = 8
#: Seconds one group round may take on top of a failed job's wait (the watch's default floor:
#: a round took 45-70 s at load 28 on 2 cores).
ROUND = 180.0


def test_two_kills_and_two_hostile_clients_leave_the_run_live(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    # The job timeout chaos.py would pick (it follows the load), set here so that the wait
    # below knows the run's bound.
    job_timeout = load_chaos().job_timeout_floor()
    timeout_key = f"job-timeout={job_timeout}"
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "chaos.py"),
        *("--num-supernodes", "8", "--groups", "2", "--fraction", "0.75"),
        *("--kill-every", "20", "--kills", "2", "--down", "5"),
        *("--sigkill-share", "0", "--seed", "0", "--attack", "huge(1e30)@1+scale(1000)@2"),
        *("--timeout", "0", "--run-dir", str(runs)),
        # Over the script's keys: a count as the stop rule, and a log line per update (the
        # progress the test waits on).
        *("--run-config", f"max-updates={UPDATES} time-budget=0 eval-every=1 {timeout_key}"),
    ]
    # The run's own bound on a gap: a job that brings no reply while its node stays online is
    # failed after the job limit (at least job-timeout), a reply whose upload never completes
    # after OBJECT_WAIT; then it is re-sent, and the fixed group order holds the other group
    # meanwhile. So the run may go that long plus a round (the watch's default floor) without
    # an update. A killed node's job fails at once (it leaves the online set).
    floor = max(job_timeout, OBJECT_WAIT) + ROUND
    code, out = run_while_progressing(cmd, REPO, floor=floor)
    assert "chaos: 2 kills, 2 restarts" in out, out[-4000:]
    v = load_chaos().analyse(runs)
    s = v.summary
    assert s["status"] == "completed" and s["global_updates"] == UPDATES, out[-4000:]
    rejected = [r for r in v.records if r["kind"] == "client_rejected"]
    assert {r["cid"] for r in rejected} == {1, 2}  # both hostile clients, no honest one
    assert s["updates_rejected"] == {"norm": len(rejected)}
    assert not v.stalled, (v.gaps, v.median_round)
    # Each restarted node answered a job within its group's next two applications (or
    # before the run's end if fewer followed): True, not None ("too soon to tell").
    assert len(v.rejoins) >= 2 and all(done is True for _, _, done in v.rejoins), v.rejoins
    assert code == 0, out[-4000:]

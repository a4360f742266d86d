"""Progress is part of success: no update, a stall or mostly unaccepted jobs fail the run;
the wall loop's job timeout follows the measured round trips."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.admission import OFFLINE_PREFIX, RunFailed
from fl_r2sp.fl.server.loop_base import StopRule
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.wall_loop import WallLoop
from tests.fl.server.test_server_events import IdlePolicy, SilentTransport

#: Six clients in two groups, short timing jobs on the virtual clock.
SMALL = dict(timing_only=True, num_partitions=6, num_groups=2, local_iterations=2, plots=False)


class SilentFour(SilentTransport):
    """Four clients that never answer."""

    def clients(self) -> list[int]:
        return [0, 1, 2, 3]


def test_five_hostile_clients_of_six_fail_the_run_naming_the_share(tmp_path) -> None:
    cfg = RunConfig(
        **SMALL, max_updates=6, attack="huge(1e30)@0,1,2,3,4", max_lost_share=1.0,
        run_dir=str(tmp_path),
    )  # fmt: skip
    with pytest.raises(RunFailed, match=r"brought no accepted update .* max-rejected-share=0.5"):
        run(cfg, progress=False)
    out = run(cfg.replace(max_rejected_share=1.0), write=False, progress=False)
    assert out.summary["status"] == "completed"


def _silent_wall_run(**kw) -> RunFailed:
    cfg = RunConfig(**{**SMALL, "num_partitions": 4}, clock="wall", job_timeout=30.0, **kw)
    with pytest.raises(RunFailed) as info:
        run(cfg, transport=SilentFour(), write=False, progress=False)
    assert info.value.output.summary["status"] == "failed"
    return info.value


def test_a_run_without_any_global_update_fails() -> None:
    failed = _silent_wall_run(max_updates=0, time_budget=0.3, max_update_gap=0.0)
    assert "made no global update (stopped: time budget" in str(failed)
    assert failed.output.summary["jobs_in_flight"] == 4  # every job still out at the stop


def test_a_stalled_run_stops_and_fails_at_the_gap_bound() -> None:
    failed = _silent_wall_run(max_updates=10, max_update_gap=0.3)
    assert "more than max-update-gap=0.3" in str(failed)
    assert failed.output.summary["longest_update_gap"] > 0.3


def _loop(**kw) -> WallLoop:
    return WallLoop(
        policy=IdlePolicy(), transport=SilentTransport(), model_size=1, evaluator=None,
        stop=StopRule(), **kw,
    )  # fmt: skip


def test_the_job_limit_follows_the_measured_round_trips() -> None:
    loop = _loop(job_timeout=10.0, job_timeout_factor=4.0)
    assert loop.job_limit() == 10.0  # nothing measured: the floor
    for seconds in (5.0, 5.0, 5.0):
        loop._note_round_trip(seconds)
    assert loop.job_limit() == pytest.approx(20.0)  # 4 x 5 s
    assert _loop(job_timeout=10.0, job_timeout_factor=0.0).job_limit() == 10.0


def test_timed_out_jobs_raise_the_limit_instead_of_failing_at_the_floor() -> None:
    loop = _loop(job_timeout=2.0, job_timeout_factor=3.0)
    job = Job(cid=0, index=0, tag=0, weights=np.zeros(1, np.float32))
    loop.inflight[0] = (job, loop.clock.now() - 2.5)  # out for 2.5 s: past the 2 s floor
    (reply,) = loop._timed_out(loop.inflight.values(), loop.clock.now())
    assert "limit of 2s" in str(reply.error)
    loop._handle(reply)
    assert loop.job_limit() >= 3.0 * 2.5  # the wait it took, times the factor


def test_a_lost_nodes_instant_failure_does_not_pull_the_limit_down() -> None:
    loop = _loop(job_timeout=2.0, job_timeout_factor=3.0)
    loop._note_round_trip(10.0)
    job = Job(cid=0, index=0, tag=0, weights=np.zeros(1, np.float32))
    loop.inflight[0] = (job, loop.clock.now())
    loop._handle(Reply(0, 0, 0, None, error=f"{OFFLINE_PREFIX}: node 7 left"))
    assert loop.job_limit() == pytest.approx(30.0)

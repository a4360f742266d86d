"""Typed events of the virtual loop, their tie-break, group_of and the wall loop's job timeout."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pytest

from fl_r2sp.emulation.network import star_network
from fl_r2sp.emulation.profiles import get_profile
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.base import Decision, Policy, Update
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.loop_base import StopRule
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.virtual_events import (
    ClientOffline,
    ClientOnline,
    JobFailed,
    JobState,
    PushStart,
    TimerFired,
)
from fl_r2sp.fl.server.virtual_loop import VirtualLoop
from fl_r2sp.fl.server.wall_loop import WallLoop


class IdlePolicy(Policy):
    """Decides nothing; only the base class's defaults are left."""

    def start(self, now: float, weights: np.ndarray, clients: Sequence[int]) -> list[Decision]:
        return []

    def on_update(self, now: float, update: Update) -> list[Decision]:
        return []

    def on_failure(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        return []

    @property
    def weights(self) -> np.ndarray:
        return np.zeros(1, dtype=np.float32)

    @property
    def version(self) -> int:
        return 0


class SilentTransport:
    """Accepts jobs, never answers; records which nodes it was told to forget."""

    def __init__(self) -> None:
        self.forgotten: list[int] = []

    def clients(self) -> list[int]:
        return [0, 1]

    def submit(self, job: Job) -> None:
        pass

    def poll(self, timeout: float) -> list[Reply]:
        return []

    def forget(self, cid: int) -> None:
        self.forgotten.append(cid)

    def close(self) -> None:
        pass


def virtual_loop(transport: SilentTransport | None = None) -> VirtualLoop:
    return VirtualLoop(
        network=star_network(2, get_profile("lan")),
        model_bytes=4,
        overhead=0.0,
        compute_lb={},
        policy=IdlePolicy(),
        transport=transport or SilentTransport(),
        model_size=1,
        evaluator=None,
        stop=StopRule(),
        progress=False,
    )


def state(cid: int) -> JobState:
    return JobState(job=Job(cid=cid, index=0, tag=0, weights=np.zeros(1, np.float32)), dispatch=0.0)


def test_an_event_of_unknown_type_raises() -> None:
    loop = virtual_loop()
    # The untyped form the loop used to drop silently.
    loop.queue.push(1.0, 0, 0, ("timer", "gap"))
    with pytest.raises(TypeError, match="no handler for event .* of type tuple"):
        loop._step(1.0)


def test_simultaneous_events_pop_in_the_documented_order() -> None:
    loop = virtual_loop()
    offline_hi, failed_lo = ClientOffline(state(5), back=9.0), JobFailed(state(1))
    scheduled = [
        (0, ClientOnline(0)),
        (0, TimerFired("gap")),
        (1, failed_lo),
        (5, offline_hi),
        (7, PushStart(state(7))),
    ]
    for key, event in scheduled:
        loop._schedule(2.0, key, event)
    popped = [loop.queue.pop().payload for _ in scheduled]
    # An offline event goes before a failure at the same time, even of a
    # smaller client id (both used to share one priority, ordered by id).
    assert [type(e) for e in popped] == [
        PushStart,
        ClientOffline,
        JobFailed,
        TimerFired,
        ClientOnline,
    ]
    assert popped[1] is offline_hi and popped[2] is failed_lo


def test_simultaneous_offline_events_go_in_client_order() -> None:
    loop = virtual_loop()
    for cid in (3, 0, 2):
        loop._schedule(1.0, cid, ClientOffline(state(cid), back=4.0))
    assert [loop.queue.pop().payload.state.job.cid for _ in range(3)] == [0, 2, 3]


def test_a_timer_event_calls_the_policy_with_its_key() -> None:
    seen: list[tuple[float, Hashable]] = []

    class Recorder(IdlePolicy):
        def on_timer(self, now: float, key: Hashable) -> list[Decision]:
            seen.append((now, key))
            return []

    loop = virtual_loop()
    loop.policy = Recorder()
    loop.set_timer(0.5, ("gap", 2))
    loop._step(0.5)
    assert seen == [(0.5, ("gap", 2))]


def test_group_of_defaults_to_no_group_on_the_base_policy() -> None:
    assert IdlePolicy().group_of(3) is None


@pytest.mark.parametrize(
    ("strategy", "expected"), [("asp", lambda c: None), ("fl-r2sp", lambda c: c % 2)]
)
def test_dispatched_jobs_record_the_policys_group(strategy, expected) -> None:
    cfg = RunConfig(
        strategy=strategy,
        timing_only=True,
        network="lan",
        num_partitions=4,
        num_groups=2,
        local_iterations=2,
        max_updates=2,
        plots=False,
    )
    jobs = run(cfg, write=False, progress=False).events.jobs
    assert jobs and all(row["group"] == expected(row["cid"]) for row in jobs)


def test_job_timeout_rule_of_the_wall_loop() -> None:
    # The virtual loop never fails a job on real time (tests/fl/server/test_virtual_time_rules.py).
    transport = SilentTransport()
    base = WallLoop(
        policy=IdlePolicy(), transport=transport, model_size=1, evaluator=None, stop=StopRule(),
        job_timeout=6.0,
    )  # fmt: skip
    late, fresh = (
        Job(cid=c, index=i, tag=3, weights=np.zeros(1, np.float32)) for c, i in ((1, 4), (0, 2))
    )
    # Sent at 2.0 and 5.0; at 10.0 only the first is more than 6 s old.
    replies = base._timed_out([(late, 2.0), (fresh, 5.0)], now=10.0)
    assert [(r.cid, r.index, r.tag, r.weights) for r in replies] == [(1, 4, 3, None)]
    assert replies[0].error == "no reply within job-timeout limit of 6s"
    assert transport.forgotten == [1]

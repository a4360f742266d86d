"""Virtual-time results never lean on the wall clock (docs/architecture.md §4).

* a slow real reply is never a failed job: only a stall of ``job-timeout`` real seconds without
  any reply stops the run, with an error;
* a reply whose compute time undercuts the server's lower bound, whose delay is negative, or
  whose push would start before an already processed event is rejected with an error;
* a Flower node that does not answer the partition query is an error unless allowed, and a
  message lost to real time (TTL, heartbeat) stops a virtual run instead of failing a job.

Real time is a fake clock here: it moves 10 s per transport poll.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from flwr.common.constant import ErrorCode

from fl_r2sp.emulation.network import star_network
from fl_r2sp.emulation.profiles import get_profile
from fl_r2sp.fl.clients.runtime import runtime_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower import grid_transport
from fl_r2sp.fl.flower.grid_transport import GridTransport, discover_partitions
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.loop_base import StopRule
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.transport import InProcessTransport
from fl_r2sp.fl.server.virtual_checks import VirtualTimeError
from fl_r2sp.fl.server.virtual_events import JobState
from fl_r2sp.fl.server.virtual_loop import VirtualLoop

CLIENTS = list(range(4))


class FakeWall:
    """Real time that only moves when a transport polls."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Actors:
    """``actors`` workers computing queued jobs in submission order; each job takes 2 polls.

    Every poll moves real time by 10 s, so a job queued behind the others is answered long
    after ``job-timeout`` (15 s) from its submission when there is one actor.
    """

    def __init__(self, wall: FakeWall, actors: int | None) -> None:
        self.wall, self.actors = wall, actors
        self.queue: list[Job] = []
        self.polls = 0

    def clients(self) -> list[int]:
        return list(CLIENTS)

    def submit(self, job: Job) -> None:
        self.queue.append(job)

    def poll(self, timeout: float) -> list[Reply]:
        self.wall.t += 10.0
        self.polls += 1
        if self.actors is None:  # answers nothing, ever
            return []
        if self.polls % 2:  # the actors are busy computing
            return []
        done, self.queue = self.queue[: self.actors], self.queue[self.actors :]
        return [step(job) for job in done]

    def forget(self, cid: int) -> None:  # what a timed-out job would do (it must not happen)
        self.queue = [job for job in self.queue if job.cid != cid]

    def close(self) -> None:
        pass


def step(job: Job) -> Reply:
    """1 s of compute, 0.1 s delay, a step of 0.01 * (cid + 1) on every weight."""
    moved = job.weights + np.float32(0.01 * (job.cid + 1))
    return Reply(job.cid, job.index, job.tag, moved, num_examples=10, compute_s=1.0, delay_s=0.1)


def loop_over(transport: Any, wall: FakeWall) -> VirtualLoop:
    return VirtualLoop(
        network=star_network(len(CLIENTS), get_profile("lan")),
        model_bytes=8,
        overhead=0.0,
        compute_lb={c: 1.0 for c in CLIENTS},
        wall_clock=wall,
        policy=FLR2SPPolicy(
            4, GroupParams(num_groups=2, fraction=0.5), OutlierParams(enabled=False)
        ),
        transport=transport,
        model_size=2,
        evaluator=None,
        stop=StopRule(max_updates=4),
        progress=False,
        job_timeout=15.0,
    )


def test_replies_queued_behind_a_busy_actor_never_fail_a_job() -> None:
    runs = {}
    for actors in (1, 2, 4):
        wall = FakeWall()
        loop = loop_over(Actors(wall, actors), wall)
        loop.run(np.ones(2, np.float32), CLIENTS)
        runs[actors] = (loop, wall.t)
    one, _ = runs[1]
    assert runs[1][1] > 15.0 * 4  # one actor: real time ran far past job-timeout
    assert not [row for row in one.events.jobs if row.get("failed")]
    assert not one.events.of_kind("client_failure")
    for loop, _ in runs.values():
        assert loop.policy.version == 4
        assert loop.policy.weights.tobytes() == one.policy.weights.tobytes()
        assert loop.events.jobs == one.events.jobs


def test_a_stall_stops_the_run_with_an_error_not_a_virtual_failure() -> None:
    wall = FakeWall()
    loop = loop_over(Actors(wall, None), wall)
    with pytest.raises(VirtualTimeError, match=r"no reply for 20 real seconds .job-timeout=15"):
        loop.run(np.ones(2, np.float32), CLIENTS)
    assert wall.t == 30.0  # idle from t=10 (first empty poll); 30 - 10 > 15
    assert not loop.events.of_kind("client_failure")


def timing_cfg() -> RunConfig:
    return RunConfig(
        timing_only=True,
        network="lan",
        delay="constant(value=0.1)",
        local_iterations=10,
        num_partitions=4,
        num_groups=2,
        max_updates=4,
        plots=False,
    )


@pytest.mark.parametrize(
    ("compute", "delay", "needle"),
    [
        (0.5, 1.0, "below the server's lower bound .* model compute differently"),
        (1.0, -0.05, "the delay >= 0"),
        (1.0, float("nan"), "must be finite"),
    ],
)
def test_replies_that_undercut_the_conservative_bound_are_rejected(compute, delay, needle):
    cfg = timing_cfg()
    runtime = runtime_for(cfg)

    def client(job: Job) -> Reply:  # client 1 disagrees with the server from its 2nd job on
        reply = runtime.run(job)
        if job.cid == 1 and job.index == 1:
            return Reply(
                **{**reply.__dict__, "compute_s": reply.compute_s * compute, "delay_s": delay}
            )
        return reply

    transport = InProcessTransport(CLIENTS, client)
    with pytest.raises(VirtualTimeError, match=f"client 1 job 1 .*{needle}"):
        run(cfg, transport=transport, write=False, progress=False)


def test_a_push_before_a_processed_event_is_rejected_not_scheduled() -> None:
    wall = FakeWall()
    loop = loop_over(Actors(wall, 1), wall)
    loop.compute_lb = {}  # no bound to violate: only the clock can catch it
    loop.clock.advance_to(5.0)
    st = JobState(job=Job(cid=2, index=0, tag=0, weights=np.ones(2, np.float32)), dispatch=0.0)
    st.pull_end = 1.0
    st.reply = Reply(2, 0, 0, np.ones(2, np.float32), compute_s=1.0, delay_s=0.5)
    with pytest.raises(VirtualTimeError, match=r"push at virtual t=2.5, before .* t=5.0"):
        loop._schedule_push(st)
    assert loop.queue.peek() is None  # nothing was scheduled in the past


# -- the Flower side, on stand-ins for the Grid and its messages ------------------------------
def answer(mid: str, node: int, pid: int, told: int) -> SimpleNamespace:
    config = {"partition-id": pid, "num-partitions": told}
    return SimpleNamespace(
        content={"config": config},
        has_error=lambda: False,
        metadata=SimpleNamespace(reply_to_message_id=mid, src_node_id=node),
    )


class QueryGrid:
    """Three connected nodes; node 13 never answers the partition query."""

    def get_node_ids(self) -> list[int]:
        return [11, 12, 13]

    def push_messages(self, msgs: list[Any]) -> list[str]:
        return [f"q{m.dst}" for m in msgs]

    def pull_messages(self, ids: list[str]) -> list[SimpleNamespace]:
        known = {"q11": answer("q11", 11, 0, 3), "q12": answer("q12", 12, 1, 3)}
        return [known[i] for i in ids if i in known]


@pytest.fixture
def stand_in_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    # Flower builds real Messages only inside a running app.
    monkeypatch.setattr(
        grid_transport, "Message", lambda content, dst, kind: SimpleNamespace(dst=dst)
    )


@pytest.mark.usefixtures("stand_in_messages")
def test_a_node_missing_from_discovery_is_an_error_unless_allowed(caplog) -> None:
    with pytest.raises(RuntimeError, match=r"2 of num-partitions=3 .* missing partition ids: 2"):
        discover_partitions(QueryGrid(), timeout=0.02, expected=3)
    found = discover_partitions(QueryGrid(), timeout=0.02, expected=3, allow_missing=True)
    assert found == {0: 11, 1: 12}
    assert "allow-missing-nodes=true" in caplog.text
    assert RunConfig().allow_missing_nodes is False


def lost(mid: str, code: int) -> SimpleNamespace:
    error = SimpleNamespace(code=code, reason="Error: Reply Message Unavailable")
    return SimpleNamespace(
        has_error=lambda: True, error=error, metadata=SimpleNamespace(reply_to_message_id=mid)
    )


@pytest.mark.parametrize("virtual", [True, False])
def test_a_message_lost_to_real_time_stops_a_virtual_run(virtual: bool) -> None:
    grid = SimpleNamespace(
        pull_messages=lambda ids: [lost("m1", ErrorCode.REPLY_MESSAGE_UNAVAILABLE)]
    )
    transport = GridTransport(grid, [np.zeros(2, np.float32)], {0: 11}, virtual=virtual)
    transport.inflight["m1"] = Job(cid=0, index=4, tag=2, weights=np.zeros(2, np.float32))
    transport._by_cid[0] = "m1"
    if virtual:
        with pytest.raises(VirtualTimeError, match="client 0 job 4: the message was lost"):
            transport.poll(timeout=0.0)
    else:  # wall clock: an error reply, i.e. a failed job, as before
        (reply,) = transport.poll(timeout=0.0)
        assert (reply.cid, reply.index, reply.weights) == (0, 4, None)
        assert reply.error.startswith("client error")

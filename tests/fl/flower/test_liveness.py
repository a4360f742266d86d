"""Liveness on a stand-in Flower Grid: lost nodes, backoff, duplicates, re-attachment.

``FakeGrid`` implements what the project calls on ``flwr.serverapp.Grid``
(``get_node_ids``, ``push_messages``, ``pull_messages``) in process: nodes
answer the partition query with their partition id and a train message with
the weights they got plus 1; ``online`` is the SuperLink's online set, and
push/pull failures can be injected.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pytest
from flwr.app import ArrayRecord

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower import discovery, grid_transport
from fl_r2sp.fl.flower.grid_transport import GridTransport, find_partitions
from fl_r2sp.fl.flower.retry import RetryPolicy, call_with_retry, is_transient
from fl_r2sp.fl.flower.strategy import FLR2SP
from fl_r2sp.fl.policies.base import ModelUpdated, Record, Send, Update
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.admission import MISFIT_PREFIX, OFFLINE_PREFIX, Admission, AdmissionParams
from fl_r2sp.fl.server.loop_base import StopRule
from fl_r2sp.fl.server.transport import InProcessTransport
from fl_r2sp.fl.server.wall_loop import WallLoop
from fl_r2sp.models.weights import flatten
from fl_r2sp.telemetry.rundir import complete_run_dirs

FAST = RetryPolicy(attempts=4, first_wait=0.001, total=1.0)


def http_error(status: int, text: str = "database is locked") -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://superlink/api")
    return httpx.HTTPStatusError(
        text, request=request, response=httpx.Response(status, text=text, request=request)
    )


def reply(mid: str, node: int, content: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(
        content=content,
        has_error=lambda: False,
        metadata=SimpleNamespace(reply_to_message_id=mid, src_node_id=node),
    )


class FakeGrid:
    """Nodes {node id: partition id}; ``online`` is the SuperLink's online set."""

    def __init__(self, nodes: dict[int, int], num_partitions: int) -> None:
        self.partition = dict(nodes)
        self.online = set(nodes)
        self.num_partitions = num_partitions
        self.fail_push = 0  # the next n pushes raise HTTP 500
        self.trained: list[tuple[int, int]] = []  # (node, cid) of every train message
        self.pushed: list[int] = []  # destination of every message pushed
        self.on_train: Any = None  # called with the number of train messages so far
        self.misfit: set[int] = set()  # partitions whose replies carry one element too many
        self.lose_query: set[int] = set()  # nodes that drop their next query (never answer it)
        self.wedged: set[int] = set()  # nodes that answer no query at all (a wedged SuperNode)
        self._ready: dict[str, SimpleNamespace] = {}
        self._seq = 0

    def add(self, node: int, pid: int) -> None:
        self.partition[node] = pid
        self.online.add(node)

    def get_node_ids(self) -> list[int]:
        return sorted(self.online)

    def push_messages(self, msgs: list[Any]) -> list[str]:
        if self.fail_push:
            self.fail_push -= 1
            raise http_error(500)
        return [self._push(m) for m in msgs]

    def _push(self, msg: Any) -> str:
        self._seq += 1
        mid, node = f"m{self._seq}", msg.dst
        self.pushed.append(node)
        if node not in self.online:
            return mid  # lost: never answered
        if "arrays" not in msg.content:
            if node in self.wedged:
                return mid
            if node in self.lose_query:  # as a SuperNode that failed to pull it
                self.lose_query.discard(node)
                return mid
            config = {"partition-id": self.partition[node], "num-partitions": self.num_partitions}
            self._ready[mid] = reply(mid, node, {"config": config})
            return mid
        cid = int(msg.content["config"]["cid"])
        self.trained.append((node, cid))
        arrays = [a + 1 for a in msg.content["arrays"].to_numpy_ndarrays()]
        if cid in self.misfit:
            arrays = [np.append(arrays[0], np.float32(1.0))]
        metrics = {"num-examples": 10, "train-loss": 0.5}
        content = {"arrays": ArrayRecord(arrays), "metrics": metrics}
        self._ready[mid] = reply(mid, node, content)
        if self.on_train is not None:
            self.on_train(len(self.trained))
        return mid

    def pull_messages(self, ids: list[str]) -> list[SimpleNamespace]:
        return [self._ready.pop(i) for i in ids if i in self._ready]


@pytest.fixture(autouse=True)
def stand_in_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid_transport, "Message", stand_in_message)


def stand_in_message(content: Any, dst: int, kind: str, ttl: float = 0.0) -> SimpleNamespace:
    """What the transport's ``Message(...)`` builds here (Flower builds real Messages only
    inside a running app)."""
    return SimpleNamespace(content=content, dst=dst, kind=kind)


TEMPLATE = [np.zeros(2, np.float32)]


def transport_for(grid: FakeGrid, expected: int) -> GridTransport:
    pmap = find_partitions(grid, timeout=1.0, expected=expected, wait_for_all=True, retry=FAST)
    return GridTransport(grid, TEMPLATE, pmap.node_of, pmap=pmap, retry=FAST, liveness_every=0)


def job(cid: int, index: int = 0) -> Job:
    return Job(cid=cid, index=index, tag=0, weights=np.zeros(2, np.float32))


# -- retries ----------------------------------------------------------------------------------
def test_transient_errors_are_retried_with_doubling_waits() -> None:
    calls, waits = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise http_error(500)
        return "ok"

    policy = RetryPolicy(attempts=5, first_wait=0.1, total=10.0)
    assert call_with_retry(flaky, "push", policy, sleep=waits.append) == "ok"
    assert waits == [0.1, 0.2]  # 0.1 x 2^0, 0.1 x 2^1


def test_retries_are_bounded_and_permanent_errors_are_not_retried() -> None:
    waits: list[float] = []

    def down() -> None:
        raise http_error(500)

    with pytest.raises(httpx.HTTPStatusError):
        call_with_retry(down, "pull", RetryPolicy(attempts=3, first_wait=1.0), sleep=waits.append)
    assert waits == [1.0, 2.0]  # 3 attempts, 2 waits
    now = [0.0]  # a fake clock that the fake sleep advances

    def sleep(seconds: float) -> None:
        now[0] += seconds

    policy = RetryPolicy(attempts=9, first_wait=1.0, total=2.5)
    with pytest.raises(httpx.HTTPStatusError):  # the second wait (2 s) would pass 2.5 s
        call_with_retry(down, "pull", policy, sleep=sleep, clock=lambda: now[0])
    assert now[0] == 1.0
    assert not is_transient(http_error(400)) and is_transient(http_error(503))
    assert not is_transient(ValueError("bad")) and is_transient(RuntimeError("database is locked"))


def test_a_lock_storm_longer_than_six_attempts_is_outlasted_within_the_time_bound() -> None:
    # The SuperLink answers HTTP 500 for 30 s (each refused call takes 1 s), then works.
    now = [0.0]

    def storm() -> str:
        now[0] += 1.0
        if now[0] < 30.0:
            raise http_error(500)
        return "ok"

    def sleep(seconds: float) -> None:
        now[0] += seconds

    assert call_with_retry(storm, "pull", RetryPolicy.within(60.0), sleep, lambda: now[0]) == "ok"
    now[0] = 0.0
    with pytest.raises(httpx.HTTPStatusError):  # the time bound still holds
        call_with_retry(storm, "pull", RetryPolicy.within(10.0), sleep, lambda: now[0])
    assert now[0] < 30.0


def test_a_push_hit_by_passing_superlink_errors_still_reaches_the_node() -> None:
    grid = FakeGrid({10: 0, 11: 1}, 2)
    transport = transport_for(grid, 2)
    grid.fail_push = 2  # two HTTP 500 "database is locked", then fine
    transport.submit(job(1))
    assert grid.trained == [(11, 1)]
    (got,) = transport.poll(timeout=1.0)
    assert got.error is None and got.weights is not None and got.weights.tolist() == [1.0, 1.0]


def test_arrays_that_misfit_the_model_are_filed_as_a_rejected_shape_not_an_error() -> None:
    grid = FakeGrid({10: 0, 11: 1}, 2)
    grid.misfit = {1}
    transport = transport_for(grid, 2)
    transport.submit(job(1))
    (got,) = transport.poll(timeout=1.0)
    assert got.error == f"{MISFIT_PREFIX}: array 0 has shape (3,), expected (2,)"
    verdict = Admission(AdmissionParams(0.0, 0, 1), 2).check(got)
    assert verdict is not None and (verdict.reason, verdict.rejected) == ("shape", True)


# -- node state -------------------------------------------------------------------------------
def test_a_job_whose_node_left_the_online_set_fails_at_once_as_offline() -> None:
    grid = FakeGrid({10: 0, 11: 1}, 2)
    transport = transport_for(grid, 2)
    grid.online.discard(11)  # killed: the SuperLink's heartbeat expiry took it off
    transport.submit(job(1))  # the transport has not looked yet: the push goes out
    (lost,) = transport.poll(timeout=5.0)
    assert lost.cid == 1 and lost.error is not None and lost.error.startswith(OFFLINE_PREFIX)
    admission = Admission(AdmissionParams(0.0, 0, 1), 2)
    assert admission.check(lost).reason == "offline"  # type: ignore[union-attr]
    transport.submit(job(1, 1))  # known offline now: fails without a push
    (again,) = transport.poll(timeout=0.0)
    assert again.index == 1 and "has no live node" in (again.error or "")
    assert grid.pushed == [10, 11, 11]  # two queries, one train message: the second never went


# -- partition ids ----------------------------------------------------------------------------
def test_a_duplicate_partition_is_refused_and_takes_over_when_the_first_node_leaves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    grid = FakeGrid({10: 0, 11: 1, 12: 0}, 2)
    with caplog.at_level(logging.WARNING, logger="fl_r2sp"):
        pmap = find_partitions(grid, timeout=1.0, expected=2, wait_for_all=True, retry=FAST)
    assert pmap.node_of == {0: 10, 1: 11}  # no crash: node 12 is refused
    assert "node 12 reports partition-id=0, which live node 10 already serves" in caplog.text
    assert pmap.refresh() == []  # still refused while node 10 is online
    grid.online.discard(10)
    assert pmap.refresh() == [0] and pmap.node_of[0] == 12
    grid.online.discard(11)  # partition 1's node misses its heartbeats ...
    assert pmap.refresh() == [] and pmap.lost() == {1}
    grid.online.add(11)  # ... and sends them again: the same node is back
    assert pmap.refresh() == [1] and pmap.node_of[1] == 11


def test_a_lost_partition_query_is_asked_again() -> None:
    grid = FakeGrid({10: 0, 11: 1}, 2)
    grid.lose_query.add(11)
    now = [0.0]
    pmap = discovery.PartitionMap(grid, 2, grid_transport.query_message, FAST, clock=lambda: now[0])
    assert pmap.refresh() == [0] and pmap.pending() == 1  # node 11 never answers ...
    now[0] += discovery.REQUERY_AFTER / 2
    assert pmap.refresh() == [] and pmap.pending() == 1
    now[0] += discovery.REQUERY_AFTER  # ... so it is asked again, and answers
    assert pmap.refresh() == [1] and pmap.node_of == {0: 10, 1: 11}
    assert pmap.pending() == 0  # the lost query is not awaited any more
    assert grid.pushed == [10, 11, 11]


def test_a_wedged_node_is_reported_silent_and_its_restart_ends_the_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Node 11 (partition 1) answers nothing; at t = 2.5 x REQUERY_AFTER a supervisor stops it
    # (it leaves the online set) and starts partition 1 again as node 12.
    grid = FakeGrid({10: 0, 11: 1}, 2)
    grid.wedged.add(11)
    after = discovery.REQUERY_AFTER

    def restart() -> None:
        grid.online.discard(11)
        grid.add(12, 1)

    fake = FakeTime({2.5 * after: restart})
    with caplog.at_level(logging.WARNING, logger="fl_r2sp"):
        pmap = discovery.discover(
            grid, grid_transport.query_message, 2, timeout=10 * after, wait_for_all=True,
            retry=FAST, poll=0.5, clock=fake.clock, sleep=fake.sleep,
        )  # fmt: skip
    reports = [discovery.SILENT.search(r.getMessage()) for r in caplog.records]
    # Reported after each unanswered query, with a new message each time ...
    assert [(int(m[1]), int(m[2])) for m in reports if m] == [(11, 1), (11, 2)]
    assert grid.pushed == [10, 11, 11, 11, 12]
    # ... and the restarted node ends the wait at once: the gone node's query is not awaited.
    assert pmap.node_of == {0: 10, 1: 12} and pmap.pending() == 0
    assert fake.now == 2.5 * after


def test_nodes_missing_at_start_are_named_after_the_bounded_wait() -> None:
    grid = FakeGrid({10: 0, 11: 1}, 3)
    with pytest.raises(RuntimeError, match="missing partition ids: 2"):
        find_partitions(grid, timeout=0.05, expected=3, wait_for_all=True, retry=FAST)
    pmap = find_partitions(grid, 0.05, 3, wait_for_all=True, allow_missing=True, retry=FAST)
    assert pmap.node_of == {0: 10, 1: 11}


def test_a_run_whose_partitions_never_answered_leaves_a_failed_folder(tmp_path: Path) -> None:
    grid = FakeGrid({10: 0}, 2)  # partition 1 never connects
    cfg = RunConfig(
        clock="wall", num_partitions=2, num_groups=1, timing_only=True, plots=False,
        run_dir=str(tmp_path), node_wait=0.2, node_grace=0.0,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="missing partition ids: 1"):
        FLR2SP(cfg).start(grid=grid, initial_arrays=ArrayRecord(TEMPLATE), timeout=30)
    (folder,) = complete_run_dirs(tmp_path)  # final: the marker beside the summary
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    assert summary["status"] == "failed" and summary["global_updates"] == 0
    assert "partition discovery: 1 of num-partitions=2" in summary["failure"]
    assert "missing partition ids: 1" in summary["failure"]


class FakeTime:
    """A clock that moves only when slept on; ``at`` maps a time to a hook run once then."""

    def __init__(self, at: dict[float, Any] | None = None) -> None:
        self.now = 0.0
        self.at = dict(at or {})

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        for t in [t for t in self.at if t <= self.now]:
            self.at.pop(t)()


def wait_for(grid: FakeGrid, expected: int, grace: float, fake: FakeTime) -> Any:
    return discovery.discover(
        grid,
        grid_transport.query_message,
        expected,
        timeout=120.0,
        wait_for_all=True,
        retry=FAST,
        poll=0.5,
        grace=grace,
        clock=fake.clock,
        sleep=fake.sleep,
    )


def test_nodes_missing_at_start_fail_after_the_grace_naming_them_not_after_node_wait() -> None:
    # 2 of 3 nodes online, nothing changes: the wait ends once 5 s pass with no news.
    fake = FakeTime()
    pmap = wait_for(FakeGrid({10: 0, 11: 1}, 3), 3, 5.0, fake)
    assert fake.now == 5.0 and pmap.node_of == {0: 10, 1: 11}
    with pytest.raises(RuntimeError, match=r"2 nodes online; .* node-grace=5 s.*ids: 2\."):
        discovery.check_found(pmap.node_of, 3, False, len(pmap.online), pmap.waited)
    # Without a grace the same start waits the whole node-wait.
    fake = FakeTime()
    wait_for(FakeGrid({10: 0, 11: 1}, 3), 3, 0.0, fake)
    assert fake.now == 120.0


def test_a_node_that_connects_during_the_grace_restarts_it() -> None:
    grid = FakeGrid({10: 0, 11: 1}, 4)
    fake = FakeTime({4.0: lambda: grid.add(12, 2)})  # partition 2 connects at t = 4
    pmap = wait_for(grid, 4, 5.0, fake)
    assert fake.now == 9.0  # 5 s after the last news, not after the first 5 s
    assert sorted(pmap.node_of) == [0, 1, 2]
    # Every node online (the missing partition is claimed twice): no early end, node-wait.
    fake = FakeTime()
    wait_for(FakeGrid({10: 0, 11: 1, 12: 1}, 3), 3, 5.0, fake)
    assert fake.now == 120.0


def test_a_node_told_another_num_partitions_fails_at_once_not_after_the_wait() -> None:
    grid = FakeGrid({10: 0}, 4)  # told 4, the run says 2
    with pytest.raises(ValueError, match="num-partitions=4 .* num-partitions=2"):
        find_partitions(grid, timeout=60.0, expected=2, wait_for_all=True, retry=FAST)


# -- the policy and the loop ------------------------------------------------------------------
def test_an_empty_group_is_skipped_and_reported_and_taken_back_on_rejoin() -> None:
    policy = FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=1.0), OutlierParams(enabled=False))
    w0 = np.zeros(2, np.float32)
    policy.start(0.0, w0, [0, 1, 2, 3])
    out: list[Any] = []
    for cid in (0, 2):  # group 0 loses both members: 1 + max_failures (3) failures each
        for _ in range(4):
            out += policy.on_failure(1.0, cid, 0, "node offline")
    empty = [d for d in out if isinstance(d, Record) and d.kind == "group_empty"]
    assert [(d.fields["group"], d.fields["why"]) for d in empty] == [
        (0, "client 2 dropped after repeated failures")
    ]
    for cid in (1, 3):  # group 1 collects; the turn (group 0) must not block it
        out = policy.on_update(2.0, Update(cid, np.full(2, 2.0, np.float32), 10, 0))
    assert [d.version for d in out if isinstance(d, ModelUpdated)] == [1]
    np.testing.assert_allclose(policy.weights, [1.0, 1.0])  # 1/2 w0 + 1/2 mean(2, 2)
    back = policy.on_rejoin(3.0, 0)
    assert back[0].fields == {"t": 3.0, "cid": 0, "group": 0, "revived": True}
    (send,) = [d for d in back if isinstance(d, Send)]
    assert send.cids == (0,) and send.tag == 0
    np.testing.assert_allclose(send.weights, [1.0, 1.0])  # restarts from the current model


def test_a_restarted_node_is_reattached_and_gets_work_within_two_rounds() -> None:
    grid = FakeGrid({10: 0, 11: 1, 12: 2, 13: 3}, 4)
    transport = transport_for(grid, 4)
    policy = FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=1.0), OutlierParams(enabled=False))
    loop = WallLoop(
        policy=policy,
        transport=transport,
        model_size=2,
        evaluator=None,
        stop=StopRule(max_updates=12),
        progress=False,
        job_timeout=60.0,
    )

    def chaos(trained: int) -> None:
        if trained == 6:
            grid.online.discard(11)  # partition 1's node dies
        if trained == 12:
            grid.add(21, 1)  # ... and comes back with a new node id

    grid.on_train = chaos
    loop.run(flatten(TEMPLATE), transport.clients())
    assert loop.stopped == "reached max-updates=12"
    rejoin = [r for r in loop.events.of_kind("client_rejoin") if r["revived"]]
    assert [r["cid"] for r in rejoin] == [1]  # partition 1 was dropped, then taken back
    assert 1 not in policy.failures.dropped
    assert (21, 1) in grid.trained  # the new node got partition 1's work
    group_1 = [r for r in loop.events.of_kind("group_collect") if r["group"] == 1]
    after = [r["collected"] for r in group_1 if r["t"] >= rejoin[0]["t"]]
    assert any(1 in collected for collected in after[:2])  # within two rounds of group 1


def test_resends_after_error_replies_back_off_and_offline_ones_do_not() -> None:
    transport = InProcessTransport([0, 1], lambda j: Reply(j.cid, j.index, j.tag, None))
    policy = FLR2SPPolicy(2, GroupParams(num_groups=1), OutlierParams(enabled=False))
    loop = WallLoop(
        policy=policy,
        transport=transport,
        model_size=2,
        evaluator=None,
        stop=StopRule(),
        progress=False,
        resend_backoff=0.5,
    )
    loop.clock = SimpleNamespace(now=lambda: 100.0)  # type: ignore[assignment]
    error = Reply(0, 0, 0, None, error="client error: database is locked")
    loop._note_error(error)
    assert loop.waiting == {0: 100.5}
    loop.dispatch(100.0, 0, np.zeros(2, np.float32), 0)  # the policy's re-send waits
    assert 0 not in loop.inflight and 0 in loop.parked
    loop._note_error(error)
    assert loop.waiting == {0: 101.0}  # 0.5 x 2
    loop._release_waiting(101.0)
    assert 0 in loop.inflight and not loop.parked
    loop._note_error(Reply(0, 1, 0, None, error=f"{OFFLINE_PREFIX}: node 11 left"))
    assert loop.errors == {} and loop.waiting == {}  # a lost node is not a passing error

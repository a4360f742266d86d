"""The virtual-time server loop: conservative, deterministic event processing.

Each job is three phases in virtual time: the model *pull* (a network flow
from the server's egress to the client), *compute* (the duration the client
reports: device speed x tau + injected delay) and the update *push* (a flow
into the server's ingress). The network model decides the transfer times
under contention. Clients really train (through any transport), but the
server only learns a job's compute duration when its reply arrives, and the
push start it implies may precede events already queued. Hence the
conservative rule (ARCHITECTURE.md, "Verified facts"):

    process the next event at virtual time t only if no job whose reply is
    missing could start its push at or before t, i.e. for every such job
    (pull end, or a lower bound on it) + compute lower bound > t.

Replies are consumed in whatever order they really arrive, but they only
fill in data; every state change happens in (time, priority, partition id)
order. So a seed gives the same result with any number of Ray actors.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fl_r2sp.emulation.availability import AvailabilityModel
from fl_r2sp.emulation.clock import VirtualClock
from fl_r2sp.emulation.events import EventQueue
from fl_r2sp.emulation.network import Network, pull_links, push_links
from fl_r2sp.protocol import Job, Reply
from fl_r2sp.server.loop_base import LoopBase, log
from fl_r2sp.strategies.base import Update

# Tie-break of simultaneous events: transfers finishing first, then pushes
# starting, failures, timers, and clients coming back online.
PRIO_PUSH_START, PRIO_FAIL, PRIO_TIMER, PRIO_ONLINE = 1, 2, 3, 4


@dataclass
class _JobState:
    job: Job
    dispatch: float
    pull_fid: int | None = None
    pull_end: float | None = None
    reply: Reply | None = None
    failure: str | None = None
    push_fid: int | None = None
    dead: bool = False  # failed or cancelled: its reply is discarded
    submitted: bool = False
    sent: float = 0.0  # wall time of the real submission (for job-timeout)


class VirtualLoop(LoopBase):
    """Run a policy in virtual time over a transport and a network model.

    Parameters
    ----------
    network : Network
        Star network with links "server-egress", "server-ingress",
        "c{i}-down", "c{i}-up" (see ``fl_r2sp.emulation.network``).
    model_bytes : int
        Bytes of one model transfer (pull or push).
    overhead : float
        Fixed per-transfer overhead in seconds.
    compute_lb : dict[int, float]
        Per-client lower bound of the compute duration (device speed x tau):
        the look-ahead of the conservative rule.
    availability : AvailabilityModel or None
        Client dropouts (None = always online).
    seed : int
        Seed of the availability draws.
    job_timeout : float (default: 600)
        Wall seconds before an unanswered job counts as failed.
    **base : Any
        Passed to :class:`LoopBase`.
    """

    clock_name = "virtual"

    def __init__(
        self,
        *,
        network: Network,
        model_bytes: int,
        overhead: float,
        compute_lb: dict[int, float],
        availability: AvailabilityModel | None = None,
        seed: int = 0,
        job_timeout: float = 600.0,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.net = network
        self.model_bytes = float(model_bytes)
        self.overhead = overhead
        self.compute_lb = compute_lb
        self.availability = availability
        self.seed = seed
        self.job_timeout = job_timeout
        self.clock = VirtualClock()
        self.queue = EventQueue()
        self.active: dict[int, _JobState] = {}  # cid -> job in virtual flight
        self.flows: dict[int, tuple[str, _JobState]] = {}
        self.unreplied: dict[tuple[int, int], _JobState] = {}  # real reply missing
        self.deferred: dict[int, _JobState] = {}  # waiting for the node to be free
        self.offline_until: dict[int, float] = {}
        self.parked: dict[int, tuple[np.ndarray, int]] = {}  # sends to offline clients
        self._bounds: list[tuple[float, int, int]] = []  # see _must_wait
        self._pull_lbs: dict[int, float] = {}
        self._node_jobs: set[int] = set()  # clients whose submitted job is unanswered

    # -- public ------------------------------------------------------------------
    def run(self, weights: np.ndarray, clients: list[int]) -> np.ndarray:
        """Run until a stop condition; returns the final global weights."""
        self.evaluate(0.0, 0, weights)
        self.execute(0.0, self.policy.start(0.0, weights, clients))
        while self.stopped is None:
            t = self._next_time()
            if t is None:
                if self.unreplied:
                    self._receive()
                    continue
                self.finish("no more events (every client idle or lost)")
                break
            if self._must_wait(t):
                self._receive()
                continue
            if self.time_exceeded(t):
                break
            self._step(t)
        self.evaluate_final(self.clock.now())
        return self.policy.weights

    # -- scheduling ------------------------------------------------------------------
    def _next_time(self) -> float | None:
        ev = self.queue.peek()
        nc = self.net.next_completion()
        times = [x for x in (ev.time if ev else None, nc[0] if nc else None) if x is not None]
        return min(times) if times else None

    def _pull_lb(self, cid: int) -> float:
        """Uncontended pull time of ``cid`` (a lower bound of any pull)."""
        lb = self._pull_lbs.get(cid)
        if lb is None:
            lb = self.net.uncontended_time(self.model_bytes, pull_links(cid), self.overhead)
            self._pull_lbs[cid] = lb
        return lb

    def _push_start_bound(self, st: _JobState) -> float:
        """Earliest virtual time the job's push could start (reply unknown)."""
        if st.pull_end is not None:
            pull_end = st.pull_end
        else:
            pull_end = max(self.clock.now(), st.dispatch + self._pull_lb(st.job.cid))
        return pull_end + self.compute_lb.get(st.job.cid, 0.0)

    def _must_wait(self, t: float) -> bool:
        """True if a job with a missing reply could start its push at or before t.

        ``_bounds`` is a lazy min-heap of lower bounds: a job's true bound
        only grows with time, so a stale entry is re-keyed when it reaches
        the top, and answered/dead jobs are dropped there.
        """
        heap = self._bounds
        while heap:
            stored, cid, index = heap[0]
            st = self.unreplied.get((cid, index))
            if st is None or st.dead:
                heapq.heappop(heap)
                continue
            if stored > t:
                return False
            true = self._push_start_bound(st)
            if true > stored:
                heapq.heapreplace(heap, (true, cid, index))
                continue
            return True
        return False

    def _receive(self) -> None:
        """Block for at least one real reply and file what it tells."""
        replies = self.transport.poll(timeout=1.0) or self._timed_out()
        for reply in replies:
            st = self.unreplied.pop((reply.cid, reply.index), None)
            self._node_jobs.discard(reply.cid)
            self.replies.append((reply.cid, reply.index))
            self._submit_deferred(reply.cid)
            if st is None or st.dead:
                continue
            st.reply = reply
            st.failure = self.check_reply(reply)
            if st.failure is not None:
                log.warning("client %d job %d rejected: %s", reply.cid, reply.index, st.failure)
            if st.pull_end is not None:
                self._schedule_push(st)

    def _timed_out(self) -> list[Reply]:
        """Error replies for jobs unanswered for longer than ``job_timeout``."""
        now = time.monotonic()
        late = [s for s in self.unreplied.values() if s.submitted and now - s.sent > self.job_timeout]
        for st in late:
            self.transport.forget(st.job.cid)
        return [
            Reply(s.job.cid, s.job.index, s.job.tag, None,
                  error=f"no reply within job-timeout={self.job_timeout:g}s")
            for s in late
        ]

    def _step(self, t: float) -> None:
        """Process everything due at the earliest time ``t``."""
        nc = self.net.next_completion()
        self.clock.advance_to(t)
        if nc is not None and nc[0] <= t:
            done = self.net.advance(t)
            for fid, _ in sorted(done, key=lambda d: (d[1], self.flows[d[0]][1].job.cid)):
                kind, st = self.flows.pop(fid)
                (self._pull_done if kind == "pull" else self._push_done)(t, st)
            return
        self.net.advance(t)
        ev = self.queue.pop()
        kind, payload = ev.payload
        if kind == "push_start":
            self._start_push(t, payload)
        elif kind == "fail":
            self._fail(t, payload, payload.failure or "failed")
        elif kind == "timer":
            self.execute(t, self.policy.on_timer(t, payload))
        elif kind == "offline":
            self._offline(t, *payload)
        elif kind == "online":
            self._online(t, payload)

    def set_timer(self, at: float, key: Hashable) -> None:
        """Queue ``policy.on_timer(at, key)``."""
        self.queue.push(at, PRIO_TIMER, 0, ("timer", key))

    # -- job phases ------------------------------------------------------------------
    def dispatch(self, now: float, cid: int, weights: np.ndarray, tag: int) -> None:
        """Start the pull of a new job (or park it while the client is offline)."""
        if self.offline_until.get(cid, -1.0) > now or cid in self.active:
            self.parked[cid] = (weights, tag)  # the newest send wins
            return
        job = self.next_job(cid, weights, tag)
        st = _JobState(job=job, dispatch=now)
        self.active[cid] = st
        self.unreplied[(cid, job.index)] = st
        bound = now + self._pull_lb(cid) + self.compute_lb.get(cid, 0.0)
        heapq.heappush(self._bounds, (bound, cid, job.index))
        st.pull_fid = self.net.start_flow(now, self.model_bytes, pull_links(cid), self.overhead, tag=cid)
        self.flows[st.pull_fid] = ("pull", st)
        self.events.dispatched(cid, job.index, tag, now, getattr(self.policy, "group_of", lambda c: None)(cid))
        if self._node_busy(cid):
            self.deferred[cid] = st
        else:
            self._submit(st)
        self._schedule_dropout(now, st)

    def _node_busy(self, cid: int) -> bool:
        # A dead job's message may still be running on the node: one in flight per node.
        return cid in self._node_jobs

    def _submit_deferred(self, cid: int) -> None:
        st = self.deferred.get(cid)
        if st is not None and not self._node_busy(cid):
            del self.deferred[cid]
            if not st.dead:
                self._submit(st)

    def _submit(self, st: _JobState) -> None:
        st.submitted, st.sent = True, time.monotonic()
        self._node_jobs.add(st.job.cid)
        self.transport.submit(st.job)

    def _pull_done(self, t: float, st: _JobState) -> None:
        st.pull_end = t
        self.events.job(st.job.cid, st.job.index)["pull_end"] = t
        if st.reply is not None:
            self._schedule_push(st)

    def _schedule_push(self, st: _JobState) -> None:
        assert st.reply is not None and st.pull_end is not None
        if st.failure is not None:
            at = st.pull_end + self.compute_lb.get(st.job.cid, 0.0)
            self.queue.push(at, PRIO_FAIL, st.job.cid, ("fail", st))
            return
        at = st.pull_end + st.reply.compute_s + st.reply.delay_s
        row = self.events.job(st.job.cid, st.job.index)
        row.update(train_end=st.pull_end + st.reply.compute_s, delay=st.reply.delay_s)
        self.queue.push(at, PRIO_PUSH_START, st.job.cid, ("push_start", st))

    def _start_push(self, t: float, st: _JobState) -> None:
        if st.dead:
            return
        self.events.job(st.job.cid, st.job.index)["push_start"] = t
        st.push_fid = self.net.start_flow(t, self.model_bytes, push_links(st.job.cid), self.overhead, tag=st.job.cid)
        self.flows[st.push_fid] = ("push", st)

    def _push_done(self, t: float, st: _JobState) -> None:
        cid = st.job.cid
        self.events.job(cid, st.job.index)["push_end"] = t
        del self.active[cid]
        r = st.reply
        assert r is not None and r.weights is not None
        upd = Update(cid=cid, weights=r.weights.astype(np.float32, copy=False),
                     num_examples=r.num_examples, tag=st.job.tag, loss=r.loss)
        self.execute(t, self.policy.on_update(t, upd))
        self._unpark(t, cid)

    def _fail(self, t: float, st: _JobState, reason: str) -> None:
        cid = st.job.cid
        if st.dead or self.active.get(cid) is not st:
            return
        st.dead = True
        if not st.submitted:  # never reached the node: no reply will come
            self.unreplied.pop((cid, st.job.index), None)
            self.deferred.pop(cid, None)
        for fid in (st.pull_fid, st.push_fid):
            if fid is not None and fid in self.flows:
                self.net.cancel_flow(fid)
                del self.flows[fid]
        del self.active[cid]
        self.events.job(cid, st.job.index)["failed"] = reason
        self.execute(t, self.policy.on_failure(t, cid, st.job.tag, reason))
        self._unpark(t, cid)

    # -- availability ------------------------------------------------------------------
    def _schedule_dropout(self, now: float, st: _JobState) -> None:
        if self.availability is None:
            return
        cid = st.job.cid
        pull = self.net.uncontended_time(self.model_bytes, pull_links(cid), self.overhead)
        push = self.net.uncontended_time(self.model_bytes, push_links(cid), self.overhead)
        # The nominal job window: uncontended transfers + compute lower bound.
        end = now + pull + self.compute_lb.get(cid, 0.0) + push
        cut = self.availability.interruption(self.seed, cid, st.job.index, now, end)
        if cut is not None:
            self.queue.push(cut[0], PRIO_FAIL, cid, ("offline", (st, cut[1])))

    def _offline(self, t: float, st: _JobState, back: float) -> None:
        cid = st.job.cid
        self.offline_until[cid] = back
        self.queue.push(back, PRIO_ONLINE, cid, ("online", cid))
        if self.active.get(cid) is st:
            self._fail(t, st, f"client offline until t={back:.3f}")

    def _online(self, t: float, cid: int) -> None:
        if self.offline_until.get(cid, 0.0) <= t:
            self._unpark(t, cid)

    def _unpark(self, t: float, cid: int) -> None:
        if cid in self.parked and cid not in self.active and self.offline_until.get(cid, -1.0) <= t:
            weights, tag = self.parked.pop(cid)
            self.dispatch(t, cid, weights, tag)

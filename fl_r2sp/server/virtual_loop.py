"""The virtual-time server loop: conservative, deterministic event processing.

Each job is three phases in virtual time: the model *pull* (a network flow
from the server's egress to the client), *compute* (the duration the client
reports: device speed x tau + injected delay) and the update *push* (a flow
into the server's ingress). The network model decides the transfer times
under contention. Clients really train (through any transport), but the
server only learns a job's compute duration when its reply arrives, and the
push start it implies may precede events already queued. Hence the
conservative rule (``docs/architecture.md`` §4; measured in §11):

    process the next event at virtual time t only if no job whose reply is
    missing could start its push at or before t, i.e. for every such job
    (pull end, or a lower bound on it) + compute lower bound > t.

Replies are consumed in whatever order they really arrive, but they only
fill in data; every state change happens in (time, priority, partition id)
order. So a seed gives the same result with any number of Ray actors.
The events are typed records dispatched on their type; their kinds and
priorities are in :mod:`fl_r2sp.server.virtual_events`.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from fl_r2sp.emulation.availability import AvailabilityModel
from fl_r2sp.emulation.clock import VirtualClock
from fl_r2sp.emulation.events import EventQueue
from fl_r2sp.emulation.network import Network, pull_links, push_links
from fl_r2sp.server.loop_base import LoopBase, log
from fl_r2sp.server.virtual_checks import StallWatch, push_start
from fl_r2sp.server.virtual_events import (
    ClientOffline,
    ClientOnline,
    JobFailed,
    JobState,
    PullDone,
    PushDone,
    PushStart,
    QueuedEvent,
    TimerFired,
    VirtualEvent,
)
from fl_r2sp.strategies.base import Update


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
    wall_clock : callable, default time.monotonic
        Real-time source of the safety timeout (tests pass a fake one).
    **base : Any
        Passed to :class:`LoopBase` (``job_timeout`` among them: here the real
        seconds the loop may wait without any reply before it stops with
        :class:`~fl_r2sp.server.virtual_checks.VirtualTimeError`; a slow reply
        never becomes a failed job, ``docs/architecture.md`` §4).
    """

    clock_name = "virtual"
    clock: VirtualClock

    def __init__(
        self,
        *,
        network: Network,
        model_bytes: int,
        overhead: float,
        compute_lb: dict[int, float],
        availability: AvailabilityModel | None = None,
        seed: int = 0,
        wall_clock: Callable[[], float] = time.monotonic,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.net = network
        self.model_bytes = float(model_bytes)
        self.overhead = overhead
        self.compute_lb = compute_lb
        self.availability = availability
        self.seed = seed
        self._stall = StallWatch(self.job_timeout, wall_clock)
        self.clock = VirtualClock()
        self.queue = EventQueue()
        self.active: dict[int, JobState] = {}  # cid -> job in virtual flight
        self.flows: dict[int, PullDone | PushDone] = {}  # flow id -> event at its end
        self.unreplied: dict[tuple[int, int], JobState] = {}  # real reply missing
        self.deferred: dict[int, JobState] = {}  # waiting for the node to be free
        self.offline_until: dict[int, float] = {}
        self.parked: dict[int, tuple[np.ndarray, int]] = {}  # sends to offline clients
        self._bounds: list[tuple[float, int, int]] = []  # see _must_wait
        self._pull_lbs: dict[int, float] = {}
        self._node_jobs: set[int] = set()  # clients whose submitted job is unanswered
        # Dispatch by type: an event of a type missing here raises (see _handle).
        self._handlers: dict[type, Callable[[float, Any], None]] = {
            PullDone: self._pull_done,
            PushDone: self._push_done,
            PushStart: self._start_push,
            ClientOffline: self._offline,
            JobFailed: self._job_failed,
            TimerFired: self._timer,
            ClientOnline: self._online,
        }

    # -- public ------------------------------------------------------------------
    def run(self, weights: np.ndarray, clients: list[int]) -> np.ndarray:
        """Run until a stop condition; returns the final global weights."""
        self.evaluate(0.0, 0, weights)
        self.execute(0.0, self.policy.start(0.0, weights, clients))
        return self.run_events()

    def run_events(self) -> np.ndarray:
        """Process events until a stop condition (a resumed run starts here)."""
        while self.stopped is None:
            self.checkpoint_if_due()  # between two events: the state is quiescent
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

    def _push_start_bound(self, st: JobState) -> float:
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
        replies = self.transport.poll(timeout=1.0)
        if replies:
            self._stall.progress()
        else:  # real time never fails a job here: only a long stall stops the run
            self._stall.idle(sorted(self.unreplied))
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

    def _step(self, t: float) -> None:
        """Process everything due at the earliest time ``t``."""
        nc = self.net.next_completion()
        self.clock.advance_to(t)
        if nc is not None and nc[0] <= t:
            done = self.net.advance(t)
            for fid, _ in sorted(done, key=lambda d: (d[1], self.flows[d[0]].state.job.cid)):
                self._handle(t, self.flows.pop(fid))
            return
        self.net.advance(t)
        self._handle(t, self.queue.pop().payload)

    def _handle(self, t: float, event: VirtualEvent) -> None:
        """Run the handler of ``event``'s type at virtual time ``t``.

        Raises
        ------
        TypeError
            If no handler is registered for the event's type (a new kind of
            event must not be dropped silently).
        """
        handler = self._handlers.get(type(event))
        if handler is None:
            known = ", ".join(sorted(k.__name__ for k in self._handlers))
            raise TypeError(
                f"virtual loop has no handler for event {event!r} of type "
                f"{type(event).__name__}; known types: {known}"
            )
        handler(t, event)

    def _schedule(self, at: float, key: int, event: QueuedEvent) -> None:
        """Queue ``event`` at ``at``; ties break by its type's priority, then ``key``."""
        self.queue.push(at, event.priority, key, event)

    def set_timer(self, at: float, key: Hashable) -> None:
        """Queue ``policy.on_timer(at, key)``."""
        # Key 0 for every timer: simultaneous timers fire in the order they were set.
        self._schedule(at, 0, TimerFired(key))

    def _timer(self, t: float, event: TimerFired) -> None:
        self.execute(t, self.policy.on_timer(t, event.key))

    # -- job phases ------------------------------------------------------------------
    def dispatch(self, now: float, cid: int, weights: np.ndarray, tag: int) -> None:
        """Start the pull of a new job (or park it while the client is offline)."""
        if self.offline_until.get(cid, -1.0) > now or cid in self.active:
            self.parked[cid] = (weights, tag)  # the newest send wins
            return
        job = self.next_job(cid, weights, tag)
        st = JobState(job=job, dispatch=now)
        self.active[cid] = st
        self.unreplied[(cid, job.index)] = st
        bound = now + self._pull_lb(cid) + self.compute_lb.get(cid, 0.0)
        heapq.heappush(self._bounds, (bound, cid, job.index))
        st.pull_fid = self.net.start_flow(
            now, self.model_bytes, pull_links(cid), self.overhead, tag=cid
        )
        self.flows[st.pull_fid] = PullDone(st)
        self.events.dispatched(cid, job.index, tag, now, self.policy.group_of(cid))
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

    def _submit(self, st: JobState) -> None:
        st.submitted, st.sent = True, time.monotonic()
        self._node_jobs.add(st.job.cid)
        self.transport.submit(st.job)

    def _pull_done(self, t: float, event: PullDone) -> None:
        st = event.state
        st.pull_end = t
        self.events.job(st.job.cid, st.job.index)["pull_end"] = t
        if st.reply is not None:
            self._schedule_push(st)

    def _schedule_push(self, st: JobState) -> None:
        assert st.reply is not None and st.pull_end is not None
        if st.failure is not None:
            at = st.pull_end + self.compute_lb.get(st.job.cid, 0.0)
            self._schedule(at, st.job.cid, JobFailed(st))
            return
        cid, r = st.job.cid, st.reply
        at = push_start(
            cid,
            st.job.index,
            st.pull_end,
            r.compute_s,
            r.delay_s,
            self.compute_lb.get(cid, 0.0),
            self.clock.now(),
        )
        row = self.events.job(st.job.cid, st.job.index)
        row.update(train_end=st.pull_end + st.reply.compute_s, delay=st.reply.delay_s)
        self._schedule(at, st.job.cid, PushStart(st))

    def _start_push(self, t: float, event: PushStart) -> None:
        st = event.state
        if st.dead:
            return
        cid = st.job.cid
        self.events.job(cid, st.job.index)["push_start"] = t
        st.push_fid = self.net.start_flow(
            t, self.model_bytes, push_links(cid), self.overhead, tag=cid
        )
        self.flows[st.push_fid] = PushDone(st)

    def _push_done(self, t: float, event: PushDone) -> None:
        st = event.state
        cid = st.job.cid
        self.events.job(cid, st.job.index)["push_end"] = t
        r = st.reply
        assert r is not None and r.weights is not None
        # The norm bound is state: checked here, in virtual-time order, never on receipt.
        rejected = self.admit_update(st.job, r)
        if rejected is not None:
            self._fail(t, st, rejected)
            return
        del self.active[cid]
        upd = Update(
            cid=cid,
            weights=r.weights.astype(np.float32, copy=False),
            num_examples=int(r.num_examples),
            tag=st.job.tag,
            loss=r.loss,
        )
        self.execute(t, self.policy.on_update(t, upd))
        self._unpark(t, cid)

    def _job_failed(self, t: float, event: JobFailed) -> None:
        self._fail(t, event.state, event.state.failure or "failed")

    def _fail(self, t: float, st: JobState, reason: str) -> None:
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
        self.settle_failure(cid, st.job.index, reason)  # no verdict noted: it went offline
        self.execute(t, self.policy.on_failure(t, cid, st.job.tag, reason))
        self._unpark(t, cid)

    # -- availability ------------------------------------------------------------------
    def _schedule_dropout(self, now: float, st: JobState) -> None:
        if self.availability is None:
            return
        cid = st.job.cid
        pull = self.net.uncontended_time(self.model_bytes, pull_links(cid), self.overhead)
        push = self.net.uncontended_time(self.model_bytes, push_links(cid), self.overhead)
        # The nominal job window: uncontended transfers + compute lower bound.
        end = now + pull + self.compute_lb.get(cid, 0.0) + push
        cut = self.availability.interruption(self.seed, cid, st.job.index, now, end)
        if cut is not None:
            self._schedule(cut[0], cid, ClientOffline(st, cut[1]))

    def _offline(self, t: float, event: ClientOffline) -> None:
        st, back = event.state, event.back
        cid = st.job.cid
        self.offline_until[cid] = back
        self._schedule(back, cid, ClientOnline(cid))
        if self.active.get(cid) is st:
            self._fail(t, st, f"client offline until t={back:.3f}")

    def _online(self, t: float, event: ClientOnline) -> None:
        cid = event.cid
        if self.offline_until.get(cid, 0.0) <= t:
            self._unpark(t, cid)

    def _unpark(self, t: float, cid: int) -> None:
        if cid in self.parked and cid not in self.active and self.offline_until.get(cid, -1.0) <= t:
            weights, tag = self.parked.pop(cid)
            self.dispatch(t, cid, weights, tag)

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
priorities are in :mod:`fl_r2sp.fl.server.virtual_events`, the handlers of the job
phases and of availability in :mod:`fl_r2sp.fl.server.virtual_jobs`; this module
keeps the loop's state, the conservative rule and the event dispatch.
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
from fl_r2sp.emulation.network import Network
from fl_r2sp.fl.server.loop_base import log
from fl_r2sp.fl.server.virtual_checks import StallWatch
from fl_r2sp.fl.server.virtual_events import (
    ClientOffline,
    ClientOnline,
    JobFailed,
    JobState,
    PullDone,
    PushDone,
    PushStart,
    TimerFired,
    VirtualEvent,
)
from fl_r2sp.fl.server.virtual_jobs import VirtualJobPhases


class VirtualLoop(VirtualJobPhases):
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
        :class:`~fl_r2sp.fl.server.virtual_checks.VirtualTimeError`; a slow reply
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

    def set_timer(self, at: float, key: Hashable) -> None:
        """Queue ``policy.on_timer(at, key)``."""
        # Key 0 for every timer: simultaneous timers fire in the order they were set.
        self._schedule(at, 0, TimerFired(key))

    def _timer(self, t: float, event: TimerFired) -> None:
        self.execute(t, self.policy.on_timer(t, event.key))

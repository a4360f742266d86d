"""The wall-clock server loop: real time, real transfers (deployments, demos).

Jobs go out as soon as the policy decides; replies are handled as they really
arrive; the policy's timers (the FL-R²SP gap) fire in real time; the round
time T is therefore estimated from measured round trips. Clients sleep their
injected delay for real. Nothing here is deterministic across runs — use the
virtual loop for experiments.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import Any

import numpy as np

from fl_r2sp.emulation.clock import WallClock
from fl_r2sp.protocol import Job, Reply
from fl_r2sp.server.loop_base import LoopBase, log
from fl_r2sp.strategies.base import Update


class WallLoop(LoopBase):
    """Run a policy in real time over a transport.

    Parameters
    ----------
    poll_interval : float (default: 0.05)
        Longest wait for replies before timers are checked again.
    **base : Any
        Passed to :class:`LoopBase` (``job_timeout`` among them).
    """

    clock_name = "wall"
    clock: WallClock

    def __init__(self, *, poll_interval: float = 0.05, **base: Any) -> None:
        super().__init__(**base)
        self.clock = WallClock()
        self.poll_interval = poll_interval
        self.timers: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self.inflight: dict[int, tuple[Job, float]] = {}
        self.parked: dict[int, tuple[np.ndarray, int]] = {}

    def run(self, weights: np.ndarray, clients: list[int]) -> np.ndarray:
        """Run until a stop condition; returns the final global weights."""
        self.evaluate(0.0, 0, weights)
        self.execute(self.clock.now(), self.policy.start(self.clock.now(), weights, clients))
        return self.run_events()

    def run_events(self) -> np.ndarray:
        """Handle replies and timers until a stop condition (a resumed run starts here)."""
        while self.stopped is None:
            self.checkpoint_if_due()  # between two replies: the state is quiescent
            now = self.clock.now()
            if self.time_exceeded(now):
                break
            self._fire_timers(now)
            if not self.inflight and not self.timers:
                self.finish("no more events (every client idle or lost)")
                break
            wait = self.poll_interval
            if self.timers:
                wait = max(0.0, min(wait, self.timers[0][0] - now))
            replies = self.transport.poll(timeout=wait)  # before forgetting the late nodes
            for reply in replies + self._timed_out(self.inflight.values(), now):
                self._handle(reply)
        self.evaluate_final(self.clock.now())
        return self.policy.weights

    def _fire_timers(self, now: float) -> None:
        while self.timers and self.timers[0][0] <= now and self.stopped is None:
            at, _, key = heapq.heappop(self.timers)
            self.execute(self.clock.now(), self.policy.on_timer(self.clock.now(), key))

    def set_timer(self, at: float, key: Hashable) -> None:
        """Fire ``policy.on_timer(key)`` at wall time ``at``."""
        heapq.heappush(self.timers, (at, next(self._seq), key))

    def dispatch(self, now: float, cid: int, weights: np.ndarray, tag: int) -> None:
        """Send a job now (or when the client's current job is answered)."""
        if cid in self.inflight:
            self.parked[cid] = (weights, tag)
            return
        job = self.next_job(cid, weights, tag)
        self.inflight[cid] = (job, now)
        self.events.dispatched(cid, job.index, tag, now, self.policy.group_of(cid))
        self.transport.submit(job)

    def _handle(self, reply: Reply) -> None:
        self.replies.append((reply.cid, reply.index))
        entry = self.inflight.get(reply.cid)
        if entry is None or entry[0].index != reply.index:
            return  # a reply to a job we already gave up on
        del self.inflight[reply.cid]
        now = self.clock.now()
        row = self.events.job(reply.cid, reply.index)
        row.update(push_end=now, delay=reply.delay_s)
        failure = self.check_reply(reply)
        if failure is not None:
            log.warning("client %d job %d rejected: %s", reply.cid, reply.index, failure)
        else:
            failure = self.admit_update(entry[0], reply)  # the norm bound, in arrival order
        if failure is not None:
            row["failed"] = failure
            self.settle_failure(reply.cid, reply.index, failure)
            self.execute(now, self.policy.on_failure(now, reply.cid, reply.tag, failure))
        else:
            assert reply.weights is not None
            upd = Update(
                reply.cid,
                reply.weights.astype(np.float32, copy=False),
                int(reply.num_examples),
                reply.tag,
                reply.loss,
            )
            self.execute(now, self.policy.on_update(now, upd))
        if reply.cid in self.parked and reply.cid not in self.inflight:
            weights, tag = self.parked.pop(reply.cid)
            self.dispatch(self.clock.now(), reply.cid, weights, tag)

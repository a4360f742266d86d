"""The wall-clock server loop: real time, real transfers (deployments, demos).

Jobs go out as soon as the policy decides; replies are handled as they really
arrive; the policy's timers (the FL-R²SP gap) fire in real time; the round
time T is therefore estimated from measured round trips. Clients sleep their
injected delay for real. Nothing here is deterministic across runs — use the
virtual loop for experiments.

Liveness: a job that failed with an error (not a lost node, not a rejected
update, not arrays that misfit the model) is re-sent after a backoff that
doubles with each consecutive error (``resend-backoff``), so that a passing
SuperLink error does not exhaust the policy's ``max-failures`` within
milliseconds; a transport that reports
re-attached clients (``take_rejoined``, the Flower grid transport) has them
handed to ``policy.on_rejoin``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from fl_r2sp.emulation.clock import WallClock
from fl_r2sp.fl.policies.base import Update
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.admission import MISFIT_PREFIX, OFFLINE_PREFIX, TIMEOUT_PREFIX
from fl_r2sp.fl.server.loop_base import LoopBase, log


class WallLoop(LoopBase):
    """Run a policy in real time over a transport.

    Parameters
    ----------
    poll_interval : float (default: 0.05)
        Longest wait for replies before timers are checked again.
    resend_backoff : float (default: 0.5)
        Seconds before the re-send after a client's first consecutive error;
        doubled per further error, capped at :attr:`MAX_BACKOFF` (0 = at once).
    job_timeout_factor : float (default: 0.0)
        An unanswered job fails after ``max(job_timeout, factor x EMA of the job round
        trips)``; 0 = after ``job_timeout`` alone.
    max_update_gap : float (default: 0.0)
        Stop, as a run without progress (:attr:`no_progress`), after this many seconds
        without a global update (0 = never).
    **base : Any
        Passed to :class:`LoopBase` (``job_timeout`` among them: the timeout's floor).
    """

    clock_name = "wall"
    clock: WallClock
    #: Longest re-send backoff in seconds.
    MAX_BACKOFF = 30.0
    #: Weight of the newest job round trip in the EMA the timeout follows.
    ROUND_EMA_WEIGHT = 0.2

    def __init__(
        self,
        *,
        poll_interval: float = 0.05,
        resend_backoff: float = 0.5,
        job_timeout_factor: float = 0.0,
        max_update_gap: float = 0.0,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.clock = WallClock()
        self.poll_interval = poll_interval
        self.resend_backoff = resend_backoff
        self.job_timeout_factor = job_timeout_factor
        self.max_update_gap = max_update_gap
        self.round_ema: float | None = None  # EMA of job round trips (timeouts included)
        self.no_progress: str | None = None  # why the run stopped without progress, if it did
        self.errors: dict[int, int] = {}  # consecutive error replies per client
        self.waiting: dict[int, float] = {}  # client -> when its backed-off re-send may go
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
            if self._stalled(now):
                break
            self._fire_timers(now)
            self._release_waiting(now)
            if not self.inflight and not self.timers and not self.waiting:
                self.finish("no more events (every client idle or lost)")
                break
            wait = min([self.poll_interval, *(at - now for at, _, _ in self.timers[:1])])
            wait = max(0.0, min([wait, *(at - now for at in self.waiting.values())]))
            replies = self.transport.poll(timeout=wait)  # before forgetting the late nodes
            for reply in replies + self._timed_out(self.inflight.values(), now):
                self._handle(reply)
            self._rejoin()
        self.evaluate_final(self.clock.now())
        return self.policy.weights

    def job_limit(self) -> float:
        """Seconds an unanswered job may take now: max(floor, factor x EMA round trip)."""
        if self.job_timeout_factor <= 0 or self.round_ema is None:
            return self.job_timeout
        return max(self.job_timeout, self.job_timeout_factor * self.round_ema)

    def _timed_out(self, sent: Iterable[tuple[Job, float]], now: float) -> list[Reply]:
        """Error replies for the jobs sent more than :meth:`job_limit` before ``now``.

        ``sent`` pairs each unanswered job with the wall time it was handed to
        the transport, on the same clock as ``now``. The transport forgets the
        late jobs' nodes, so that a late answer cannot block the next job.
        """
        limit = self.job_limit()
        late = [job for job, at in sent if now - at > limit]
        for job in late:
            self.transport.forget(job.cid)
        error = f"{TIMEOUT_PREFIX} limit of {limit:.3g}s"
        return [Reply(job.cid, job.index, job.tag, None, error=error) for job in late]

    def _stalled(self, now: float) -> bool:
        """True (and stops) when no global update came for ``max_update_gap`` seconds."""
        gap = now - self.last_update_at
        if not self.max_update_gap or gap <= self.max_update_gap:
            return False
        self.no_progress = (
            f"no global update for {gap:.3g}s, more than max-update-gap={self.max_update_gap:g}"
        )
        self.finish(self.no_progress)
        return True

    def _note_round_trip(self, seconds: float) -> None:
        w = self.ROUND_EMA_WEIGHT
        ema = self.round_ema
        self.round_ema = seconds if ema is None else (1 - w) * ema + w * seconds

    def summary(self) -> dict[str, Any]:
        """:meth:`LoopBase.summary` plus the job limit at the end and any stall."""
        out = super().summary()
        out.update(job_limit_final=self.job_limit(), no_progress=self.no_progress)
        return out

    def _fire_timers(self, now: float) -> None:
        while self.timers and self.timers[0][0] <= now and self.stopped is None:
            at, _, key = heapq.heappop(self.timers)
            self.execute(self.clock.now(), self.policy.on_timer(self.clock.now(), key))

    def _release_waiting(self, now: float) -> None:
        for cid in [c for c, at in self.waiting.items() if at <= now]:
            del self.waiting[cid]
            if cid in self.parked and cid not in self.inflight:
                weights, tag = self.parked.pop(cid)
                self.dispatch(now, cid, weights, tag)

    def _rejoin(self) -> None:
        take = getattr(self.transport, "take_rejoined", None)
        for cid in take() if take is not None else []:
            log.info("client %d re-attached to a new node", cid)
            self.errors.pop(cid, None)
            now = self.clock.now()  # one reading: the rejoin row and its job share a time
            self.execute(now, self.policy.on_rejoin(now, cid))

    def _note_error(self, reply: Reply) -> None:
        """Count consecutive error replies; back off the client's next job (a passing error)."""
        error = reply.error
        # A misfit reply is an answer (a rejected update), not a passing SuperLink error.
        if error is None or error.startswith((OFFLINE_PREFIX, TIMEOUT_PREFIX, MISFIT_PREFIX)):
            self.errors.pop(reply.cid, None)
            return
        streak = self.errors[reply.cid] = self.errors.get(reply.cid, 0) + 1
        if self.resend_backoff > 0:
            pause = min(self.MAX_BACKOFF, self.resend_backoff * 2 ** (streak - 1))
            self.waiting[reply.cid] = self.clock.now() + pause

    def set_timer(self, at: float, key: Hashable) -> None:
        """Fire ``policy.on_timer(key)`` at wall time ``at``."""
        heapq.heappush(self.timers, (at, next(self._seq), key))

    def dispatch(self, now: float, cid: int, weights: np.ndarray, tag: int) -> None:
        """Send a job now (or when the client's current job is answered)."""
        if cid in self.inflight or cid in self.waiting:
            self.parked[cid] = (weights, tag)  # the newest model goes when the client is free
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
        # Timed-out jobs too: the wait they took is a lower bound of their round trip, so
        # a loaded machine raises the limit instead of failing every job at the floor. A lost
        # node's job ends at once without a round trip: it would pull the limit down.
        if not (reply.error or "").startswith(OFFLINE_PREFIX):
            self._note_round_trip(now - entry[1])
        row = self.events.job(reply.cid, reply.index)
        row.update(push_end=now, delay=reply.delay_s)
        self._note_error(reply)  # before the policy re-sends: the re-send waits out the backoff
        failure = self.check_reply(reply)
        if failure is not None:
            log.warning("client %d job %d not admitted: %s", reply.cid, reply.index, failure)
        else:
            failure = self.admit_update(entry[0], reply)  # the norm bound, in arrival order
        if failure is not None:
            row["failed"] = failure
            self.fail_job(now, entry[0], failure)
        else:
            assert reply.weights is not None
            upd = Update(
                reply.cid,
                reply.weights.astype(self.policy.weights.dtype, copy=False),
                int(reply.num_examples),
                reply.tag,
                reply.loss,
            )
            self.execute(now, self.policy.on_update(now, upd))
        if reply.cid in self.parked and reply.cid not in self.inflight | self.waiting.keys():
            weights, tag = self.parked.pop(reply.cid)
            self.dispatch(self.clock.now(), reply.cid, weights, tag)

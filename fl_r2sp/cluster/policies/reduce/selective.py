"""Selective reduce (Algorithm 3 of the paper): partial reduce plus BAG, BPAWR and full syncs.

Every evaluation (a worker became ready, a worker was lost, or Δt passed since the last
evaluation while at least p workers wait) runs:

1. If a periodic full sync is due (``full_sync_every`` c given and k % c == 0): wait until every
   live worker is queued, then launch one weighted all-reduce of all of them.
2. Else, with at least p queued: BAG over the queue (:mod:`.bag`), then BPAWR for each group in
   order of falling bandwidth (:mod:`.bpawr`), removing the candidates each one claims from the
   training set. LAUNCH launches the group (k += 1); WAIT moves its slow members g_Δ into the
   next group and launches nothing; HOLD (fewer than p) leaves it queued. Every decision is
   in :attr:`trace` (events ``launch``, ``wait``, ``hold``).

**Consistent reading** (default): BAG with ``len(g) < p`` and a reset threshold; the three-way
decision; k also counts full syncs (so with c given, the first sync and every c-th after it are
full). **Literal reading**: BAG as printed (``len(g) <= p``, no reset); a group launches iff
t_X > θ·Δt, without its g_Δ (which moves to the next group if there is one) — this may launch
groups smaller than p (counted in ``below_p_launches``); k is not incremented by a full sync
(so with c given only full syncs follow the first). The printed rule stalls whenever no group
has anything to replace; the **stall guard** launches every queued worker as one group when the
literal rule launched nothing and no worker is training or syncing (nothing else could ever
happen), counted in ``stall_rescues``.

Wait accounting (the paper's Fig. 7 "wasted wait time", two readings): :mod:`.waits`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from fl_r2sp.cluster.policies.reduce.bag import bag
from fl_r2sp.cluster.policies.reduce.base import TRAINING, Launch, ReduceController
from fl_r2sp.cluster.policies.reduce.bpawr import HOLD, LAUNCH, WAIT, BpawrConfig, bpawr
from fl_r2sp.cluster.policies.reduce.params import ReduceParams
from fl_r2sp.cluster.policies.reduce.progress import EmpiricalProgress, ProgressModel
from fl_r2sp.cluster.policies.reduce.waits import WaitLedger


class SelectiveReduceController(ReduceController):
    """Selective reduce (see the module docstring).

    Parameters
    ----------
    params : ReduceParams
        Knobs (p, η, θ, Δt, c, hazard, reading, weights).
    bandwidth : sequence of float
        Estimated bandwidth per worker, bytes/s.
    model_bytes : float, default 500e6
        Model size v in bytes (BPAWR's sync-time estimate).
    alpha : float, default 1e-3
        Per-step latency α in seconds (BPAWR's sync-time estimate).
    progress : ProgressModel, optional
        Compute-time model; default a cold-start :class:`EmpiricalProgress` with the params'
        hazard and ``min_samples``.
    approx_time : bool, default False
        Estimate sync times with the paper's approximation 2mα + 2v/min b.
    """

    name: ClassVar[str] = "selective"

    def __init__(
        self,
        params: ReduceParams,
        bandwidth: Sequence[float],
        model_bytes: float = 500e6,
        alpha: float = 1e-3,
        progress: ProgressModel | None = None,
        approx_time: bool = False,
    ) -> None:
        super().__init__(params, bandwidth)
        if not (model_bytes >= 0 and alpha >= 0):
            raise ValueError(f"model_bytes and alpha must be >= 0, got {model_bytes}, {alpha}")
        self.literal = params.reading == "literal"
        self.progress: ProgressModel = progress or EmpiricalProgress(
            None, params.hazard, params.min_samples
        )
        self.cfg = BpawrConfig(
            self.p,
            params.eta,
            params.delta_t,
            params.theta,
            model_bytes,
            alpha,
            self.literal,
            approx_time,
        )
        self.k = 0  # syncs launched (the paper's round counter)
        self.waits = WaitLedger()
        self.counts: dict[str, float] = dict.fromkeys(
            ("stall_rescues", "below_p_launches", "full_syncs"), 0.0
        )
        self._deadline: float | None = None

    @property
    def stats(self) -> dict[str, float]:
        """Counters: the wait ledger's totals, stall rescues, below-p launches, full syncs."""
        return {**self.waits.totals, **self.counts}

    def next_deadline(self) -> float | None:
        """Δt after the last evaluation, while at least p workers wait; else None."""
        return self._deadline

    def on_timer(self, now: float) -> list[Launch]:
        """Re-evaluate (the paper's GetReadyWorkerID(Δt) timing out)."""
        return self._evaluate(now)

    def on_worker_lost(self, worker: int, now: float) -> list[Launch]:
        """Drop the worker and its open wait; re-evaluate."""
        self.waits.forget(worker)
        return super().on_worker_lost(worker, now)

    def finish(self, now: float) -> None:
        """Close open waits and slots as wasted (an upper bound)."""
        self.waits.finish(now)

    def _observe(self, compute_s: float) -> None:
        self.progress.observe(compute_s)
        self.waits.arrival()

    def _full_due(self) -> bool:
        c = self.params.full_sync_every
        return c is not None and self.k % c == 0

    def _evaluate(self, now: float) -> list[Launch]:
        self._deadline = None
        self.waits.evaluation(now)
        if self._full_due():
            if self.live > 0 and len(self.queue) == self.live:
                self.counts["full_syncs"] += 1
                self.k += 0 if self.literal else 1
                return [self._launch(sorted(self.queue), now, full=True)]
            return []
        p = self.p_live
        if len(self.queue) < p:
            return []
        out = self._select(now, p)
        if self.literal and not out and self._stalled():
            self.counts["stall_rescues"] += 1
            self.note("rescue", now, members=sorted(self.queue))
            out = [self._launch(sorted(self.queue), now)]
            self.k += 1
        if len(self.queue) >= self.p_live:
            self._deadline = now + self.params.delta_t
        return out

    def _select(self, now: float, p: int) -> list[Launch]:
        training = np.flatnonzero(self.state == TRAINING)
        elapsed = now - self.round_start[training]
        free = np.ones(self.n, dtype=bool)  # training workers no group has claimed yet
        strict = not self.literal
        queued = list(self.queue)
        groups = bag(queued, self.bandwidth[queued].tolist(), p, self.params.eta, strict, strict)
        out = []
        # BPAWR holds groups below its p: use the live-capped p, or the last live workers (fewer
        # than p once others left or died) would be held forever.
        cfg = self.cfg if p == self.cfg.p else dataclasses.replace(self.cfg, p=p)
        for i, group in enumerate(groups):
            keep = free[training]
            res = bpawr(group, self.bandwidth, training[keep], elapsed[keep], cfg, self.progress)
            free[res.claimed] = False
            members = group
            if res.replace and i + 1 < len(groups):
                groups[i + 1] = groups[i + 1] + list(res.replace)
                moved = set(res.replace)
                members = [w for w in group if w not in moved]
            if res.decision == LAUNCH and members:
                if len(members) < p:
                    self.counts["below_p_launches"] += 1
                out.append(self._launch(members, now))
                self.k += 1
            elif res.decision == WAIT:
                self._wait(group, res.replace, res.saved_s, res.expected, now)
            elif res.decision == HOLD:  # traced so the runtime's holds can be checked too
                self.note("hold", now, members=list(group))
        return out

    def _wait(
        self, group: Sequence[int], replace: Sequence[int], saved: float, k: int, now: float
    ) -> None:
        self.waits.wait(group, now)
        self.note(
            "wait", now, members=list(group), replace=list(replace), saved_s=saved, expected=k
        )

    def _stalled(self) -> bool:
        return len(self.queue) == self.live and not self.groups

    def _launch(self, members: Sequence[int], now: float, full: bool = False) -> Launch:
        waited = self.waits.launch(members, self.ready_at, now)
        return self.launch(members, now, full=full, waited_s=waited)

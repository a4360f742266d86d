"""All reduce (BSP), partial reduce (FIFO, p) and a scripted controller for replays and tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from fl_r2sp.cluster.policies.reduce.base import READY, Launch, ReduceController
from fl_r2sp.cluster.policies.reduce.params import ReduceParams


class AllReduceController(ReduceController):
    """Wait until every live worker is ready, then one all-reduce of all of them."""

    name: ClassVar[str] = "allreduce"

    def _evaluate(self, now: float) -> list[Launch]:
        if self.live > 0 and len(self.queue) == self.live:
            return [self.launch(sorted(self.queue), now)]
        return []


class PartialReduceController(ReduceController):
    """Partial reduce (Miao et al., SIGMOD'21): the first p queued workers reduce together.

    As soon as p workers are queued (p capped by the live workers), the first p in arrival
    order launch a weighted all-reduce; repeated while p remain.
    """

    name: ClassVar[str] = "partial"

    def _evaluate(self, now: float) -> list[Launch]:
        out = []
        p = self.p_live
        while len(self.queue) >= p:
            out.append(self.launch(self.queue[:p], now))
        return out


class ScriptedReduceController(ReduceController):
    """Launch given groups at given times (a replay, or a hand-made schedule in a test).

    Parameters
    ----------
    params : ReduceParams
        Only the weight rule is used.
    bandwidth : sequence of float
        One value per worker (> 0; unused beyond sizing).
    script : sequence of (float, sequence of int)
        ``(at, members)``: launch ``members`` at the first evaluation at or after ``at`` at which
        all of them are ready; entries are served in order, each once.
    """

    name: ClassVar[str] = "scripted"

    def __init__(
        self,
        params: ReduceParams,
        bandwidth: Sequence[float],
        script: Sequence[tuple[float, Sequence[int]]],
    ) -> None:
        super().__init__(params, bandwidth)
        self.pending = [(float(at), tuple(m)) for at, m in script]
        for _, members in self.pending:
            for w in members:
                self._check_worker(w)
        self._now = 0.0

    def next_deadline(self) -> float | None:
        """The earliest scripted time still ahead."""
        ahead = [at for at, _ in self.pending if at > self._now]
        return min(ahead) if ahead else None

    def on_timer(self, now: float) -> list[Launch]:
        """Launch the scripted groups that are due."""
        return self._evaluate(now)

    def _evaluate(self, now: float) -> list[Launch]:
        self._now = now
        out, left = [], []
        for at, members in self.pending:
            if at <= now and all(self.state[w] == READY for w in members):
                out.append(self.launch(members, now))
            else:
                left.append((at, members))
        self.pending = left
        return out

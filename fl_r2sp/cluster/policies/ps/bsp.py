"""BSP: a barrier at the end of every iteration.

The PS averages the pushes of iteration ``k`` from all live workers and applies them together
(:attr:`apply_mode` ``"barrier"``); only then does every live worker get its permission for
``k + 1``, all at the same instant. A lost worker is dropped from the barrier, so the others
never wait for it: if it was the last one missing, its loss releases the barrier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fl_r2sp.cluster.policies.common.base import ApplyMode, Permission, PushReport
from fl_r2sp.cluster.policies.common.params import KnoblessParams
from fl_r2sp.cluster.policies.common.trace import TracedPolicy


class PSBSPPolicy(TracedPolicy):
    """Bulk-synchronous parallel coordinator (see the module docstring).

    Parameters
    ----------
    num_workers : int
        N >= 1.
    batch_size : int
        Batch size of every worker (>= 1).
    """

    name: ClassVar[str] = "bsp"
    apply_mode: ClassVar[ApplyMode] = "barrier"

    def __init__(self, num_workers: int, batch_size: int) -> None:
        super().__init__(num_workers, batch_size)
        self.iteration = 0  # the iteration every live worker is in
        self.pushed: set[int] = set()

    def on_push(self, report: PushReport) -> list[Permission]:
        """Count the push; release iteration ``k + 1`` once every live worker pushed ``k``."""
        if not self.check_report(report):
            return []
        if report.iteration != self.iteration:
            raise ValueError(
                f"BSP: worker {report.worker} pushed iteration {report.iteration} "
                f"while the barrier is at {self.iteration}"
            )
        self.pushed.add(report.worker)
        return self._release(report.now)

    def _release(self, now: float) -> list[Permission]:
        if not self.live or not self.live <= self.pushed:
            return []
        self.note("barrier", now, iteration=self.iteration, workers=len(self.live))
        self.iteration += 1
        self.pushed = set()
        return [self.grant(w, self.iteration, now) for w in sorted(self.live)]

    def on_worker_lost(self, worker: int, now: float) -> list[Permission]:
        """Drop ``worker`` from the barrier; release it if the others all pushed."""
        super().on_worker_lost(worker, now)
        self.pushed.discard(worker)
        return self._release(now)


@dataclass(frozen=True, kw_only=True)
class BSPParams(KnoblessParams):
    """BSP's record (bulk-synchronous parallel): its name only."""

    scheme: str = "bsp"
    policy_class: ClassVar[type[TracedPolicy]] = PSBSPPolicy

"""SSP: asynchronous, but no worker runs more than ``s`` iterations ahead of the slowest.

The off-by-one, precisely. Let ``c_v`` be the number of iterations worker ``v`` has completed
(pushed). A worker that has just pushed iteration ``k`` (so ``c_w = k + 1``) may start iteration
``k + 1`` only if::

    (k + 1) - min over live v of c_v  <=  s

i.e. the iteration it starts is at most ``s`` ahead of the slowest worker's completed count.
Consequences: ``s = 0`` is BSP's timing (iteration ``k + 1`` starts only after every worker
completed ``k``); with ``s = 5`` (the paper's bound) the fastest worker may start iteration
``m + 5`` while the slowest has completed ``m``, so completed counts differ by at most ``s + 1``
(the fast worker finishes ``m + 5`` before the slow one finishes ``m``), and the worker blocks
when the gap would "reach" ``s + 1``. This matches Ho et al.'s SSP, where ``s = 0`` is BSP.

Held requests are released, in worker order, as soon as the slowest catches up (a push by it,
or its loss: a lost worker no longer counts in the minimum and is never waited for).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import ClassVar, Self

from fl_r2sp.cluster.policies.common.base import ApplyMode, Permission, PushReport
from fl_r2sp.cluster.policies.common.params import PSParams, check_int
from fl_r2sp.cluster.policies.common.trace import TracedPolicy


class SSPPolicy(TracedPolicy):
    """Stale-synchronous parallel coordinator with bound ``s`` (see the module docstring).

    Parameters
    ----------
    num_workers : int
        N >= 1.
    batch_size : int
        Batch size of every worker (>= 1).
    params : SSPParams
        The bound s.
    """

    name: ClassVar[str] = "ssp"
    apply_mode: ClassVar[ApplyMode] = "immediate"

    def __init__(self, num_workers: int, batch_size: int, params: SSPParams) -> None:
        super().__init__(num_workers, batch_size)
        self.bound = params.validate().bound
        self.held: dict[int, int] = {}  # worker -> iteration it waits to start

    def allowed(self, iteration: int) -> bool:
        """Whether a worker may start ``iteration`` now: ``iteration - min_live c <= s``."""
        return iteration - self.min_completed() <= self.bound

    def on_push(self, report: PushReport) -> list[Permission]:
        """Grant or hold the reporter's next iteration; release held workers now allowed."""
        if not self.check_report(report):
            return []
        nxt = report.iteration + 1
        self.held[report.worker] = nxt
        perms = self._release(report.now)
        if report.worker in self.held:
            self.note(
                "hold",
                report.now,
                worker=report.worker,
                iteration=nxt,
                slowest=self.min_completed(),
                why="bound",
            )
        return perms

    def _release(self, now: float) -> list[Permission]:
        slowest = self.min_completed()
        go = sorted(w for w, k in self.held.items() if self.allowed(k))
        return [self.grant(w, self.held.pop(w), now, slowest=slowest) for w in go]

    def on_worker_lost(self, worker: int, now: float) -> list[Permission]:
        """Drop ``worker`` from the minimum; release whoever it held back."""
        super().on_worker_lost(worker, now)
        self.held.pop(worker, None)
        return self._release(now)


@dataclass(frozen=True, kw_only=True)
class SSPParams(PSParams):
    """SSP's record.

    Parameters
    ----------
    scheme : str, default "ssp"
    bound : int, default 5
        s >= 0, the paper's experiments' bound (s = 0 is BSP's timing).
    """

    scheme: str = "ssp"
    bound: int = 5

    def check(self) -> None:
        """Raise ValueError unless ``bound`` is an integer >= 0."""
        check_int("ssp_bound", self.bound, 0)

    def caveats(self, workers: int) -> list[str]:
        """s = 0 is BSP's timing (warned, not refused: a comparison may want it)."""
        if self.bound == 0:
            return ["--ssp-bound 0: no worker may run ahead, SSP takes BSP's timing"]
        return []

    def make(self, num_workers: int, batch_size: int) -> SSPPolicy:
        """An :class:`SSPPolicy` for ``num_workers`` workers."""
        return SSPPolicy(num_workers, batch_size, self)

    @classmethod
    def add_flags(cls, group: argparse._ArgumentGroup) -> None:
        """``--ssp-bound``."""
        group.add_argument("--ssp-bound", type=int, default=cls().bound,
                           help=f"SSP bound s [{cls().bound}]")  # fmt: skip

    @classmethod
    def from_flags(cls, scheme: str, ns: argparse.Namespace) -> Self:
        """The record from ``--ssp-bound``."""
        return cls(scheme=scheme, bound=ns.ssp_bound)

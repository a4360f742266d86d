"""The events of the parameter-server twin (:mod:`fl_r2sp.cluster.sim.ps.engine`).

Tie-break at equal times: flow completions first (they come from the network model, not the
queue), then :class:`WorkerLost`, :class:`ComputeDone`, :class:`PermitDue`, :class:`TimerFired`;
simultaneous events of one kind in worker order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fl_r2sp.cluster.policies.common.base import Permission


@dataclass(frozen=True, slots=True)
class WorkerLost:
    """Worker ``worker`` is lost (``TwinSpec.lost_at``)."""

    worker: int
    priority: ClassVar[int] = 0

    @property
    def key(self) -> int:
        """The worker."""
        return self.worker


@dataclass(frozen=True, slots=True)
class ComputeDone:
    """Worker ``worker`` finished computing: its push starts."""

    worker: int
    priority: ClassVar[int] = 1

    @property
    def key(self) -> int:
        """The worker."""
        return self.worker


@dataclass(frozen=True, slots=True)
class PermitDue:
    """A permission the policy dated later (``permission.at``) is delivered."""

    permission: Permission
    priority: ClassVar[int] = 2

    @property
    def key(self) -> int:
        """The permitted worker."""
        return self.permission.worker


@dataclass(frozen=True, slots=True)
class TimerFired:
    """The policy's own deadline (:meth:`CoordinatorPolicy.next_deadline`) is due."""

    priority: ClassVar[int] = 3

    @property
    def key(self) -> int:
        """0: one timer at a time."""
        return 0

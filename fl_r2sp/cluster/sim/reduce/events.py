"""The events of the all-reduce-family twin (:mod:`fl_r2sp.cluster.sim.reduce.engine`).

Tie-break at equal times: ring completions in flow mode first (from the network model), then
:class:`SyncDone`, :class:`WorkerLost`, :class:`WorkerReady`, :class:`TimerFired`; one kind in
group / worker order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class SyncDone:
    """The all-reduce of group ``group`` ended."""

    group: int
    priority: ClassVar[int] = 0

    @property
    def key(self) -> int:
        """The group."""
        return self.group


@dataclass(frozen=True, slots=True)
class WorkerLost:
    """Worker ``worker`` is lost (``ReduceSimSpec.lost_at``)."""

    worker: int
    priority: ClassVar[int] = 1

    @property
    def key(self) -> int:
        """The worker."""
        return self.worker


@dataclass(frozen=True, slots=True)
class WorkerReady:
    """Worker ``worker`` finished a round's compute of ``compute_s`` seconds."""

    worker: int
    compute_s: float
    priority: ClassVar[int] = 2

    @property
    def key(self) -> int:
        """The worker."""
        return self.worker


@dataclass(frozen=True, slots=True)
class TimerFired:
    """The controller's deadline set at ``due`` (a stale one, re-armed since, is ignored)."""

    due: float
    priority: ClassVar[int] = 3

    @property
    def key(self) -> int:
        """0: one timer at a time."""
        return 0

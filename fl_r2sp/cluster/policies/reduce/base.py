"""The contract of the all-reduce-family controllers: ready workers in, groups to reduce out.

A *reduce controller* decides which ready workers run a (weighted) ring all-reduce together,
and when. Like the PS coordinator policies (:mod:`fl_r2sp.cluster.policies.common.base`) it is plain
Python: it never reads a clock and never sleeps; the caller (the runtime's controller thread or
the simulator :mod:`fl_r2sp.cluster.sim.reduce.engine`) stamps every event with ``now``.

Event protocol
--------------
1. ``start(now)``: every live worker begins round 0 at ``now``.
2. A worker that finished computing round ``iteration`` calls ``on_ready(worker, now,
   iteration, compute_s)``; the controller answers with zero or more :class:`Launch` records
   (an empty list is a *hold*). Every member of a launch starts the all-reduce at ``at``.
3. When a group's all-reduce has finished, ``on_done(group, now)``: its members begin their next
   round at ``now``.
4. ``next_deadline()`` / ``on_timer(now)``: a controller that re-evaluates on its own (selective
   reduce, every Δt while workers wait) names the time; the caller calls ``on_timer`` then.
5. ``on_worker_lost(worker, now)``: a dead worker leaves the ready queue and is never waited for
   again; the minimum group size shrinks to the number of live workers if needed, so the
   others never wait forever for partners.
6. ``finish(now)``: the run ends; open waits are closed for the statistics.

Worker states: TRAINING (computing; its round began at ``round_start``), READY (queued),
SYNCING (in a launched group), LOST.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from fl_r2sp.cluster.policies.reduce.params import ReduceParams
from fl_r2sp.cluster.policies.reduce.ring import member_weights

TRAINING, READY, SYNCING, LOST = 0, 1, 2, 3
_STATE_NAMES = ("training", "ready", "syncing", "lost")


@dataclass(frozen=True)
class Launch:
    """Run a weighted all-reduce of ``members`` from ``at`` on.

    Attributes
    ----------
    group : int
        Group id (0, 1, ... in launch order); ``on_done`` names it.
    members : tuple of int
        Worker ids.
    weights : tuple of float
        Each member's weight in the reduction (same order, sum 1).
    at : float
        Caller-clock time of the decision (the reduction starts then).
    full : bool
        A periodic full all-reduce of every live worker (selective reduce's c).
    waited_s : float
        How long BPAWR made this group's earliest-told member wait (0 if it did not).
    """

    group: int
    members: tuple[int, ...]
    weights: tuple[float, ...]
    at: float
    full: bool = False
    waited_s: float = 0.0


class ReduceController(ABC):
    """Shared state and bookkeeping of the reduce controllers (see the module docstring).

    Parameters
    ----------
    params : ReduceParams
        Scheme knobs (validated here).
    bandwidth : sequence of float
        The controller's estimate of each worker's bandwidth b_i = min(up, down), bytes/s (> 0);
        its length is the number of workers n.
    """

    name: ClassVar[str] = "base"

    def __init__(self, params: ReduceParams, bandwidth: Sequence[float]) -> None:
        self.params = params.validate()
        bw = np.asarray(bandwidth, dtype=np.float64)
        if bw.ndim != 1 or bw.size < 1 or not np.all(bw > 0) or not np.all(np.isfinite(bw)):
            raise ValueError("bandwidth needs one finite value > 0 bytes/s per worker (n >= 1)")
        self.n = int(bw.size)
        self.bandwidth: NDArray[np.float64] = bw
        self.p = params.group_min(self.n)
        self.state: NDArray[np.int8] = np.zeros(self.n, dtype=np.int8)
        self.round_start: NDArray[np.float64] = np.zeros(self.n)
        self.ready_at: NDArray[np.float64] = np.zeros(self.n)
        #: Completed iterations (rounds whose all-reduce finished) per worker.
        self.iterations: NDArray[np.int64] = np.zeros(self.n, dtype=np.int64)
        self.queue: list[int] = []  # ready workers in arrival order (FIFO)
        self.groups: dict[int, tuple[int, ...]] = {}
        self.live = self.n
        self.trace: list[dict[str, Any]] = []
        self._next_group = 0

    # -- events -------------------------------------------------------------------------
    def start(self, now: float) -> list[Launch]:
        """Every live worker begins round 0 at ``now``; nothing launches."""
        self.round_start[self.state == TRAINING] = now
        return []

    def on_ready(self, worker: int, now: float, iteration: int, compute_s: float) -> list[Launch]:
        """Queue a worker that finished computing ``iteration``; return what launches.

        Raises
        ------
        ValueError
            On an unknown worker, a worker that is not training, or an iteration that is not
            the worker's current one.
        """
        self._check_worker(worker)
        if self.state[worker] == LOST:
            self.note("ignored", now, worker=worker, iteration=iteration, why="lost")
            return []
        if self.state[worker] != TRAINING:
            state = _STATE_NAMES[int(self.state[worker])]
            raise ValueError(f"worker {worker} reported ready while {state}")
        if iteration != int(self.iterations[worker]):
            raise ValueError(
                f"worker {worker} reported iteration {iteration}, "
                f"expected {int(self.iterations[worker])}"
            )
        self.state[worker] = READY
        self.ready_at[worker] = now
        self.queue.append(worker)
        self._observe(compute_s)
        return self._evaluate(now)

    def on_done(self, group: int, now: float) -> list[Launch]:
        """Group ``group`` finished reducing: its live members begin their next round at now.

        Raises
        ------
        ValueError
            If no such group is in flight.
        """
        members = self.groups.pop(group, None)
        if members is None:
            raise ValueError(f"group {group} is not in flight (in flight: {sorted(self.groups)})")
        for w in members:
            self.iterations[w] += 1
            if self.state[w] == SYNCING:
                self.state[w] = TRAINING
                self.round_start[w] = now
        return []

    def next_deadline(self) -> float | None:
        """When :meth:`on_timer` should be called next (None: no timer)."""
        return None

    def on_timer(self, now: float) -> list[Launch]:
        """Re-evaluate at a deadline; the default controller has none."""
        return []

    def on_worker_lost(self, worker: int, now: float) -> list[Launch]:
        """Forget a dead worker (dropped from the queue); return what that unblocks."""
        self._check_worker(worker)
        if self.state[worker] == LOST:
            return []
        if self.state[worker] == READY:
            self.queue.remove(worker)
        self.state[worker] = LOST
        self.live -= 1
        self.note("lost", now, worker=worker)
        return self._evaluate(now) if self.live > 0 else []

    def finish(self, now: float) -> None:
        """The run ends at ``now`` (the default controller keeps no open accounts)."""
        return None

    # -- helpers for the schemes ----------------------------------------------------------
    @abstractmethod
    def _evaluate(self, now: float) -> list[Launch]:
        """Decide which queued workers launch now."""

    def _observe(self, compute_s: float) -> None:
        """Hook: a compute round of ``compute_s`` seconds was observed (default: unused)."""
        return None

    @property
    def p_live(self) -> int:
        """The minimum group size, capped by the live workers (so losses never deadlock)."""
        return max(1, min(self.p, self.live))

    def launch(
        self, members: Sequence[int], now: float, full: bool = False, waited_s: float = 0.0
    ) -> Launch:
        """Take ``members`` out of the queue and start their weighted all-reduce."""
        chosen = set(members)
        self.queue = [w for w in self.queue if w not in chosen]
        ordered = tuple(int(w) for w in members)
        for w in ordered:
            self.state[w] = SYNCING
        counts = [int(self.iterations[w]) + 1 for w in ordered]
        weights = member_weights(counts, self.params.weights)
        gid = self._next_group
        self._next_group += 1
        self.groups[gid] = ordered
        self.note("launch", now, group=gid, members=list(ordered), full=full, waited_s=waited_s)
        return Launch(gid, ordered, weights, float(now), full, float(waited_s))

    def note(self, event: str, at: float, **fields: Any) -> None:
        """Record a decision in :attr:`trace`."""
        self.trace.append({"event": event, "at": float(at), **fields})

    def _check_worker(self, worker: int) -> None:
        if not 0 <= worker < self.n:
            raise ValueError(f"worker {worker} is out of range 0..{self.n - 1}")

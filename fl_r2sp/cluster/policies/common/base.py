"""The coordinator-policy contract shared by the real runtime and the virtual-time twin.

A *coordinator policy* decides when each worker of a parameter-server job may start its
next iteration (pull the parameters) and with which batch size. It is plain Python: it never
reads a clock and never sleeps. The caller (the runtime's coordinator thread on PS rank 0, or
the simulator) stamps every event with the current time ``now`` in seconds on its own clock
(wall seconds since the run started, or virtual seconds) and executes the returned
:class:`Permission` records.

Event protocol (Algorithm 1 of the R²SP paper, generalised to every PS scheme)
-----------------------------------------------------------------------------
1. ``start(now)`` returns the permissions for iteration 0 (usually all workers).
2. A worker pulls, computes iteration ``k``, pushes its update, then sends a
   Request-to-Proceed carrying a :class:`PushReport`. The caller passes it to
   ``on_push(report)``; the update has already reached every PS shard.
3. The policy answers with zero or more permissions. A permission with ``at > now`` must not
   be delivered before ``at``: the caller keeps it and delivers it at ``at`` (it may also
   ask ``next_deadline()`` / ``on_timer(now)`` for permissions the policy holds back itself).
4. ``on_worker_lost(worker, now)`` removes a dead worker; the policy must never wait for it
   again and returns whatever permissions that unblocks.

How updates are applied is part of the scheme: :attr:`CoordinatorPolicy.apply_mode` is
``"immediate"`` (ASP, SSP, R²SP: the PS applies each push at once) or ``"barrier"`` (BSP: the
PS averages the pushes of one iteration from all live workers and applies them together, before
any permission for the next iteration is issued).

Admission: a policy with :attr:`CoordinatorPolicy.admission` true (SAFA) may refuse an update.
The caller asks :meth:`CoordinatorPolicy.accepts` when a report arrives, right before
``on_push``, and applies the update only if it says so (the runtime's shards hold each push
until that verdict; see :mod:`fl_r2sp.cluster.runtime.ps.shard`). Other policies accept every
update and their pushes are applied on arrival, unless :attr:`CoordinatorPolicy.push_order` is
``"permission"`` (R²SP's knob): then the caller applies a push (and passes its report to
``on_push``) only once the pushes of every earlier permission are applied
(:mod:`fl_r2sp.cluster.policies.ps.push_order`), and such a policy has ``admission`` true so
that the runtime's shards hold each push until it is released.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

ApplyMode = Literal["immediate", "barrier"]


@dataclass(frozen=True)
class PushReport:
    """A worker's Request-to-Proceed, sent right after it pushed iteration ``iteration``.

    Attributes
    ----------
    worker : int
        Worker index, ``0 .. num_workers - 1``.
    iteration : int
        The iteration whose update was just pushed (0-based).
    now : float
        Caller-clock time (s) at which the request reached the coordinator.
    compute_s : float
        Time spent computing that iteration's gradient (forward + backward).
    comm_s : float
        Time spent pulling the parameters and pushing the update of that iteration.
    blocking_s : float
        Time the worker waited for the permission that started that iteration.
    batch_size : int
        Batch size used in that iteration.
    loss : float
        Training loss of that iteration's batch (NaN if unknown).
    """

    worker: int
    iteration: int
    now: float
    compute_s: float
    comm_s: float
    blocking_s: float
    batch_size: int
    loss: float = float("nan")

    @property
    def active_s(self) -> float:
        """Compute plus communication time, blocking excluded (R²SP's iteration time T)."""
        return self.compute_s + self.comm_s

    @property
    def samples_per_s(self) -> float:
        """The worker's measured compute speed in samples per second (0 if unknown)."""
        return self.batch_size / self.compute_s if self.compute_s > 0 else 0.0


@dataclass(frozen=True)
class Permission:
    """Permission-to-Proceed: ``worker`` may start ``iteration`` (pull, then compute).

    Attributes
    ----------
    worker : int
        Worker index.
    iteration : int
        The iteration the worker may start.
    at : float
        Caller-clock time from which the permission is valid (never before the event that
        produced it).
    batch_size : int
        Batch size for that iteration (piggybacked on the permission, as in the paper).
    """

    worker: int
    iteration: int
    at: float
    batch_size: int


class CoordinatorPolicy(ABC):
    """Base class of the PS coordinator policies (BSP, ASP, SSP, R²SP, SAFA).

    Parameters
    ----------
    num_workers : int
        Number of workers N (>= 1).
    batch_size : int
        Initial batch size of every worker (>= 1).
    """

    name: ClassVar[str] = "base"
    apply_mode: ClassVar[ApplyMode] = "immediate"
    #: True if the PS holds each push until the caller's verdict on it: :meth:`accepts` can
    #: refuse an update (SAFA), or pushes are applied in permission order (``push_order``).
    admission: bool = False
    #: "arrival" (apply each push as it arrives) or "permission" (in the order of the
    #: permissions that started the iterations; :mod:`fl_r2sp.cluster.policies.ps.push_order`).
    push_order: str = "arrival"

    def __init__(self, num_workers: int, batch_size: int) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.num_workers = num_workers
        self.batch_size = batch_size
        self.live: set[int] = set(range(num_workers))

    def start(self, now: float) -> list[Permission]:
        """Permissions for iteration 0; by default every worker at ``now``."""
        return [Permission(w, 0, now, self.batch_size) for w in sorted(self.live)]

    def accepts(self, worker: int) -> bool:
        """Whether ``worker``'s update whose report arrives now is applied (default: always).

        A pure query of the policy's state, asked right before :meth:`on_push` of that report;
        the policy's own verdict in ``on_push`` must agree with it.
        """
        return True

    @abstractmethod
    def on_push(self, report: PushReport) -> list[Permission]:
        """React to a Request-to-Proceed; return the permissions it releases."""

    def next_deadline(self) -> float | None:
        """Earliest time at which :meth:`on_timer` may release something (None: no timer)."""
        return None

    def on_timer(self, now: float) -> list[Permission]:
        """Release permissions whose time has come; the default policy holds none back."""
        return []

    def on_worker_lost(self, worker: int, now: float) -> list[Permission]:
        """Forget a dead worker; return the permissions that unblocks (default: none)."""
        self.live.discard(worker)
        return []

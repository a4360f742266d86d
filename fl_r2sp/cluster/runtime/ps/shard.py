"""One parameter server's shard: the parameters it holds and how pushes change them.

Thread-safe: every method takes the shard's lock; the PS's receiver threads (one per worker)
call :meth:`ShardState.push` and its pull servers call :meth:`ShardState.read`.

Update rule (Algorithm 1, line 5, with linear learning-rate scaling): a push of gradient
``g`` computed on a batch of ``b`` examples contributes ``(b / b0)·g`` with ``b0`` the initial
batch size, and the update is ``u = -lr·(b / b0)·g``. With momentum ``mu > 0`` the PS keeps one
velocity per shard, ``v <- mu·v + (b / b0)·g`` and ``p <- p - lr·v`` (heavy-ball SGD applied
in arrival order; the paper does not use PS momentum; default 0).

Apply modes (:attr:`fl_r2sp.cluster.policies.common.base.CoordinatorPolicy.apply_mode`):

* ``"immediate"`` (ASP, SSP, R²SP, SAFA): each push is applied as it arrives;
* ``"barrier"`` (BSP): the pushes of iteration ``k`` wait until every live worker's is in,
  then their mean ``(1/N)·sum (b_i/b0)·g_i`` is applied once and :attr:`version` becomes
  ``k + 1``; a pull that needs version ``k + 1`` waits for it (:meth:`read`).

Admission (``admission=True``, SAFA): an immediate-mode push is *held*, not applied, until
:meth:`ShardState.resolve` gives the coordinator's verdict on it (apply, or drop a too-stale
update); a pull by the same worker waits until its own held push is resolved, so a worker never
starts an iteration on a model that lacks its own accepted update. Every shard resolves a push
by the same verdict (one store key per push, see :func:`~fl_r2sp.cluster.runtime.common.protocol.
verdict_key`), so the shards apply exactly the same set of updates.

Staleness of a push: the number of worker updates applied to this shard between the worker's
latest pull and the push's arrival (its own not counted), or, for a held push, its
resolution (the state it is applied to; R²SP's permission order holds pushes for a while).
Under BSP it is 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

import torch

from fl_r2sp.cluster.policies.common.base import ApplyMode


class RunAborted(RuntimeError):
    """The run is ending on an error; waiting pulls are released with this."""


def mean_in_worker_order(parts: Mapping[int, torch.Tensor], members: Sequence[int]) -> torch.Tensor:
    """The mean of ``parts[w]`` over ``members`` (non-empty), summed in ``members``' order.

    Summing in a fixed order (not arrival order) makes a barrier's result reproducible bit for
    bit. The sum starts from float32 zeros of the parts' length.
    """
    total = torch.zeros(parts[members[0]].numel())
    for w in members:
        total.add_(parts[w])
    return total / len(members)


class ShardBase:
    """What every shard keeps: its parameters, the live workers, one lock and the abort reason.

    Parameters
    ----------
    params : torch.Tensor
        The shard's initial values (1-D float32; copied).
    workers : int
        Number of workers (all live at the start).
    """

    def __init__(self, params: torch.Tensor, workers: int) -> None:
        self.params = params.detach().to(torch.float32).clone().reshape(-1)
        self.live: set[int] = set(range(workers))
        self.version = 0
        self.applied = 0  # worker updates applied
        self.pushes: list[int] = [0] * workers
        self.max_staleness = 0
        self.dropped: list[tuple[int, int]] = []  # (worker, iteration) refused
        self.aborted: str | None = None
        self._cond = threading.Condition()

    def _wait_until(
        self, ready: Callable[[], bool], timeout_s: float, describe: Callable[[], str]
    ) -> None:
        """Wait (the lock held) until ``ready()``.

        Raises
        ------
        TimeoutError
            With ``describe()`` if ``ready()`` stays false for ``timeout_s``.
        RunAborted
            If the run is aborted before ``ready()``.
        """
        deadline = time.monotonic() + timeout_s
        while not ready() and self.aborted is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(describe())
            self._cond.wait(left)
        if not ready():
            raise RunAborted(str(self.aborted))

    def abort(self, reason: str) -> None:
        """Release every waiting reader with :class:`RunAborted` (the first reason stands)."""
        with self._cond:
            if self.aborted is None:
                self.aborted = reason
            self._cond.notify_all()

    def snapshot(self) -> torch.Tensor:
        """A copy of the current parameters."""
        with self._cond:
            return self.params.clone()


class ShardState(ShardBase):
    """Parameters of one shard and their update bookkeeping.

    Parameters
    ----------
    params : torch.Tensor
        Initial values of the shard (1-D float32; copied).
    lr : float
        Learning rate.
    base_batch : int
        The initial batch size ``b0`` of the linear LR scaling.
    momentum : float
        PS momentum ``mu`` in [0, 1).
    apply_mode : str
        "immediate" or "barrier".
    workers : int
        Number of workers (all live at the start).
    track_staleness : bool, default False
        Keep each push's staleness until :meth:`wait_push` collects it (PS 0 does, for the
        coordinator's telemetry; other shards only count).
    admission : bool, default False
        Hold each push until :meth:`resolve` (immediate mode only; see the module docstring).
    """

    def __init__(
        self,
        params: torch.Tensor,
        lr: float,
        base_batch: int,
        momentum: float,
        apply_mode: ApplyMode,
        workers: int,
        track_staleness: bool = False,
        admission: bool = False,
    ) -> None:
        if apply_mode not in ("immediate", "barrier"):
            raise ValueError(f"unknown apply mode {apply_mode!r}")
        if admission and apply_mode != "immediate":
            raise ValueError("admission (held pushes) needs the immediate apply mode")
        # version: barrier steps applied (stays 0 in immediate mode); pushes: received per
        # worker; dropped: refused by the verdict
        super().__init__(params, workers)
        self.lr, self.base_batch, self.momentum = float(lr), int(base_batch), float(momentum)
        self.apply_mode = apply_mode
        self.velocity = torch.zeros_like(self.params) if momentum > 0 else None
        self.pull_mark: dict[int, int] = {}
        self.staleness: dict[tuple[int, int], int] = {}
        self.track_staleness = track_staleness
        self._pending: dict[int, dict[int, torch.Tensor]] = {}  # iteration -> worker -> g
        self.admission = admission
        self._held: dict[int, tuple[int, torch.Tensor, float]] = {}  # worker -> (k, g, scale)

    def push(self, worker: int, iteration: int, batch_size: int, grad: torch.Tensor) -> int:
        """Take worker ``worker``'s gradient of ``iteration``; return its staleness (of a held
        push: so far)."""
        scale = batch_size / self.base_batch
        with self._cond:
            self.pushes[worker] += 1
            if self.admission:  # its staleness is the one it meets when resolved
                if worker in self._held:
                    before = self._held[worker][0]
                    raise RuntimeError(f"worker {worker} pushed iteration {iteration} before "
                                       f"the verdict on iteration {before}")  # fmt: skip
                self._held[worker] = (iteration, grad.clone(), scale)
                self._cond.notify_all()
                return self.applied - self.pull_mark.get(worker, 0)
            stale = self._count_staleness(worker, iteration)
            if self.apply_mode == "immediate":
                self._step(grad, scale)
                self.applied += 1
            else:
                self._pending.setdefault(iteration, {})[worker] = grad.mul(scale)
                self._maybe_barrier()
            self._cond.notify_all()
            return stale

    def resolve(self, worker: int, iteration: int, apply: bool) -> bool:
        """Apply (``apply``) or drop ``worker``'s held push of ``iteration``; True if applied.

        Raises
        ------
        ValueError
            If that push is not the one held for ``worker``.
        """
        with self._cond:
            held = self._held.get(worker)
            if held is None or held[0] != iteration:
                have = None if held is None else held[0]
                raise ValueError(f"no held push of worker {worker} iteration {iteration} "
                                 f"(held: {have})")  # fmt: skip
            del self._held[worker]
            self._count_staleness(worker, iteration)
            if apply:
                self._step(held[1], held[2])
                self.applied += 1
            else:
                self.dropped.append((worker, iteration))
            self._cond.notify_all()
            return apply

    def _count_staleness(self, worker: int, iteration: int) -> int:
        """The updates applied since ``worker``'s latest pull, recorded for ``iteration``'s
        push (caller holds the lock)."""
        stale = self.applied - self.pull_mark.get(worker, 0)
        self.max_staleness = max(self.max_staleness, stale)
        if self.track_staleness:
            self.staleness[(worker, iteration)] = stale
        return stale

    def _step(self, grad: torch.Tensor, scale: float) -> None:
        if self.velocity is None:
            self.params.add_(grad, alpha=-self.lr * scale)
        else:
            self.velocity.mul_(self.momentum).add_(grad, alpha=scale)
            self.params.add_(self.velocity, alpha=-self.lr)

    def _maybe_barrier(self) -> None:
        got = self._pending.get(self.version)
        if not got or not self.live or not self.live <= set(got):
            return
        members = sorted(self.live)
        self._step(mean_in_worker_order(got, members), 1.0)
        self.applied += len(members)
        del self._pending[self.version]
        self.version += 1

    def read(self, worker: int, min_version: int, out: torch.Tensor, timeout_s: float) -> int:
        """Copy the parameters into ``out`` once ``version >= min_version`` and ``worker`` has
        no held push; return the version.

        The copy marks the worker's pull for the staleness count.

        Raises
        ------
        RunAborted
            If the run is aborted while waiting.
        TimeoutError
            If the version is not reached within ``timeout_s``.
        """

        def ready() -> bool:
            return self.version >= min_version and worker not in self._held

        def describe() -> str:
            what = (f"the verdict on its push of iteration {self._held[worker][0]}"
                    if worker in self._held else f"shard version {min_version}"
                    f" (at {self.version})")  # fmt: skip
            return f"worker {worker} waited {timeout_s:.0f}s for {what}"

        with self._cond:
            self._wait_until(ready, timeout_s, describe)
            out.copy_(self.params)
            self.pull_mark[worker] = self.applied
            return self.version

    def lose(self, worker: int) -> None:
        """Drop ``worker``: barriers no longer wait for it."""
        with self._cond:
            self.live.discard(worker)
            if self.apply_mode == "barrier":
                self._maybe_barrier()
            self._cond.notify_all()

    def wait_push(self, worker: int, iteration: int, timeout_s: float) -> int | None:
        """Collect the staleness of ``worker``'s push of ``iteration`` once it has arrived.

        Needs ``track_staleness``. Returns None if it does not arrive within ``timeout_s`` or
        the worker is lost meanwhile.
        """
        key = (worker, iteration)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while key not in self.staleness:
                left = deadline - time.monotonic()
                if left <= 0 or worker not in self.live:
                    return None
                self._cond.wait(left)
            return self.staleness.pop(key)

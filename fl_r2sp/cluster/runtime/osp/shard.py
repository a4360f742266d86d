"""One parameter server's shard under OSP: two barriers per iteration and the importance input.

For every iteration j a shard holds two barriers, one per stage: **RS** (routine
synchronisation, the important layers) and **ICS** (in-computation synchronisation, the
unimportant ones). Each live worker submits its local gradient of the stage's elements (the
elements of the GIB's layers that lie in this shard, :mod:`.layout`); once every live
worker's part is in, the shard averages them in worker order (so the result does not depend on
arrival order), applies ``P -= lr · mean`` to its parameters and keeps the mean for the
workers' replies (:meth:`OSPShard.await_mean`): a worker applies the same ``-lr · mean`` to its
own copy, so with all layers in RS every worker's copy equals the shard bit for bit (BSP).

When both stages of iteration j are applied, the shard hands the partial per-layer sums of
``|ḡ_j · P|`` (PGP importance, Eq. 4, on the aggregated gradient and the parameters after
iteration j) and of ``|ḡ_j|`` (the top-k ablation) over its elements, plus the workers' losses
and compute times of iteration j, to ``on_complete``; PS 0 combines every shard's sums into
the GIB of iteration j + 1 (:mod:`.server`).

Thread-safe (one condition). Also offers the three calls the coordinator makes on PS 0's shard
(``wait_push``, ``lose``, ``abort``) so the runtime's coordinator runs OSP unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from fl_r2sp.cluster.runtime.osp.gib import IterationSums
from fl_r2sp.cluster.runtime.osp.layout import LayerLayout, Range, add_ranges, count
from fl_r2sp.cluster.runtime.ps.shard import ShardBase, mean_in_worker_order

RS, ICS = "rs", "ics"
STAGES = (RS, ICS)
#: ``on_complete(iteration, sums)``: the shard's partial sums of a completed iteration.
CompleteFn = Callable[[int, IterationSums], None]


class OSPShard(ShardBase):
    """Shard ``shard`` of the parameters and its RS/ICS barriers (see the module docstring).

    Parameters
    ----------
    params : torch.Tensor
        The shard's initial values (1-D float32; copied).
    shard : int
        Shard index.
    layout : LayerLayout
        Layers and shard bounds.
    lr : float
        Learning rate (plain SGD at the PS: OSP's LGP needs the applied update to be
        ``-lr · gradient``).
    workers : int
        Number of workers (all live at the start).
    on_complete : callable or None, default None
        Called (outside the lock) when both stages of an iteration are applied.
    """

    def __init__(
        self,
        params: torch.Tensor,
        shard: int,
        layout: LayerLayout,
        lr: float,
        workers: int,
        on_complete: CompleteFn | None = None,
    ) -> None:
        # pushes: RS submissions per worker; applied: RS barriers x members; version:
        # iterations with both stages applied; max_staleness and dropped stay 0 and empty
        super().__init__(params, workers)
        self.shard, self.layout, self.lr = shard, layout, float(lr)
        self.offset = layout.bounds[shard][0]
        if self.params.numel() != layout.bounds[shard][1] - self.offset:
            raise ValueError(
                f"shard {shard}: {self.params.numel()} values for bounds {layout.bounds[shard]}"
            )
        self.on_complete = on_complete
        self._parts: dict[tuple[str, int], dict[int, torch.Tensor]] = {}
        self._ranges: dict[tuple[str, int], list[Range]] = {}
        self._means: dict[tuple[str, int], torch.Tensor] = {}
        self._grad: dict[int, torch.Tensor] = {}
        self._done: dict[int, set[str]] = {}
        self._meta: dict[int, dict[int, tuple[float, float]]] = {}

    def submit(
        self,
        stage: str,
        worker: int,
        iteration: int,
        ranges: Sequence[Range],
        payload: torch.Tensor,
        loss: float = math.nan,
        compute_s: float = math.nan,
    ) -> None:
        """Take ``worker``'s local gradient of ``stage`` in ``iteration`` (``ranges``' elements).

        Raises
        ------
        ValueError
            On an unknown stage, a size that does not match ``ranges``, ranges that differ from
            another worker's for the same stage, or a duplicate submission.
        """
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        if payload.numel() != count(ranges):
            raise ValueError(f"{stage} part of {payload.numel()} values for {count(ranges)}")
        key = (stage, iteration)
        with self._cond:
            if self._ranges.setdefault(key, list(ranges)) != list(ranges):
                raise ValueError(f"worker {worker} split iteration {iteration} differently")
            got = self._parts.setdefault(key, {})
            if worker in got or key in self._means:
                raise ValueError(f"duplicate {stage} part of worker {worker}, iter {iteration}")
            got[worker] = payload.detach().clone()
            if stage == RS:
                self.pushes[worker] += 1
                self._meta.setdefault(iteration, {})[worker] = (float(loss), float(compute_s))
            done = self._release(key)
            self._cond.notify_all()
        self._fire(done)

    def _release(self, key: tuple[str, int]) -> list[tuple[int, IterationSums]]:
        """Apply the stage's mean if every live worker's part is in; return completions."""
        got = self._parts.get(key)
        if key in self._means or not got or not self.live or not self.live <= set(got):
            return []
        stage, j = key
        members = sorted(self.live)
        ranges = self._ranges[key]
        mean = mean_in_worker_order(got, members)
        add_ranges(self.params, ranges, mean, -self.lr, self.offset)
        add_ranges(
            self._grad.setdefault(j, torch.zeros_like(self.params)), ranges, mean, 1.0, self.offset
        )
        self._means[key] = mean
        self._means.pop((stage, j - 2), None)  # every worker has collected it (see await_mean)
        del self._parts[key]
        if stage == RS:
            self.applied += len(members)
        self._done.setdefault(j, set()).add(stage)
        if self._done[j] != set(STAGES):
            return []
        del self._done[j]
        grad = self._grad.pop(j)
        meta = self._meta.pop(j, {})
        self.version = max(self.version, j + 1)
        imp = self.layout.shard_sums(self.shard, (grad * self.params).abs())
        gabs = self.layout.shard_sums(self.shard, grad.abs())
        losses = [meta[w][0] for w in sorted(meta)]
        computes = [meta[w][1] for w in sorted(meta)]
        return [(j, IterationSums(imp, gabs, losses, computes))]

    def _fire(self, done: list[tuple[int, IterationSums]]) -> None:
        if self.on_complete is not None:
            for item in done:
                self.on_complete(*item)

    def await_mean(self, stage: str, iteration: int, timeout_s: float) -> torch.Tensor:
        """The mean of ``stage`` in ``iteration`` once every live worker's part is in.

        A worker submits its part of iteration j + 1 only after its reply for j, so a mean is
        dropped two iterations later without any reader missing it.

        Raises
        ------
        RunAborted
            If the run is aborted while waiting.
        TimeoutError
            If the barrier does not complete within ``timeout_s``.
        """
        key = (stage, iteration)
        with self._cond:
            self._wait_until(
                lambda: key in self._means,
                timeout_s,
                lambda: (
                    f"shard {self.shard}: {stage} barrier of iteration {iteration} "
                    f"incomplete after {timeout_s:.0f}s"
                ),
            )
            return self._means[key]

    def lose(self, worker: int) -> None:
        """Drop ``worker``: no barrier waits for it any more."""
        with self._cond:
            self.live.discard(worker)
            done = [
                d
                for key in sorted(self._parts, key=lambda k: (k[1], k[0]))
                for d in self._release(key)
            ]
            self._cond.notify_all()
        self._fire(done)

    def wait_push(self, worker: int, iteration: int, timeout_s: float) -> int | None:
        """The coordinator's staleness query: 0 (RS is a barrier; the worker has pushed)."""
        return 0

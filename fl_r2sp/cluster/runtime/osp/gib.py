"""PS 0's GIB planner: the ICS layers of every iteration from the shards' importance sums.

The GIB of iteration j + 1 is chosen once both stages of iteration j are applied at every
shard (the digest's reading: the PS computes it on iteration j's aggregated gradient and the
global parameters while the workers compute iteration j + 1). Scores per layer: PGP importance
``Σ|ḡ·P|`` (the paper), ``Σ|ḡ|`` ("topk" ablation) or a seeded random order ("random");
the least-important layers fill the byte budget S(G^u)
(:func:`fl_r2sp.cluster.policies.osp.rules.select_ics_layers`). Iteration 0 has no aggregate
yet: its scores are all 0, so a budget is filled in layer order.

Budget (:class:`GibPlanner`): "fixed" gives ``fixed_mb`` capped at ``cap`` of the
model throughout. "scheduled" is Algorithm 1 per epoch of ``epoch_iterations`` iterations:
epoch 1 has S = 0; U_max (Eq. 5) is set when epoch 2 starts, from the mean compute time T_C
the workers reported over epoch 1 and b = ``bandwidth_mb_s`` (else the PS cap; with
neither, U_max is the cap). *Ours* (the paper leaves open which loss an epoch's rule reads):
L is the mean batch loss of iteration 0 (the loss training starts from) and epoch i > 1 reads
the mean batch loss over epoch i − 1, the epoch just finished; S_i is clamped to [0, U_max].
"""

from __future__ import annotations

import math
import statistics
from typing import Any, NamedTuple

import numpy as np

from fl_r2sp.cluster.policies.osp.budget import BudgetSchedule, u_max
from fl_r2sp.cluster.policies.osp.params import OSPParams
from fl_r2sp.cluster.policies.osp.rules import select_ics_layers


class IterationSums(NamedTuple):
    """One iteration's planner input: a shard's partial sums, or PS 0's total over the shards.

    Attributes
    ----------
    imp : list of float
        Per layer, ``Σ|ḡ·P|`` (PGP importance, Eq. 4).
    gabs : list of float
        Per layer, ``Σ|ḡ|`` (the "topk" ablation's score).
    losses : list of float
        Per worker (in worker order), its batch loss of the iteration.
    computes : list of float
        Per worker (in worker order), its compute time of the iteration in seconds.
    """

    imp: list[float]
    gabs: list[float]
    losses: list[float]
    computes: list[float]


class GibPlanner:
    """Budget and layer choice per iteration (plain Python; see the module docstring).

    Parameters
    ----------
    params : OSPParams
        The OSP knobs.
    layer_bytes : list of float
        Size of every layer in bytes.
    workers : int
        N.
    epoch_iterations : int
        Iterations per epoch of the schedule (>= 1).
    server_bandwidth_mb_s : float
        The PS cap (used for b when ``bandwidth_mb_s`` is 0).
    seed : int
        Seed of the "random" selection.
    """

    def __init__(
        self,
        params: OSPParams,
        layer_bytes: list[float],
        workers: int,
        epoch_iterations: int,
        server_bandwidth_mb_s: float,
        seed: int,
    ) -> None:
        if epoch_iterations < 1:
            raise ValueError(f"epoch_iterations must be >= 1, got {epoch_iterations}")
        self.p, self.layer_bytes, self.workers = params, list(layer_bytes), workers
        self.epoch_iterations = epoch_iterations
        self.model_bytes = float(sum(layer_bytes))
        self.bandwidth = 1e6 * (params.bandwidth_mb_s or server_bandwidth_mb_s)
        self.rng = np.random.default_rng(seed)
        self.schedule: BudgetSchedule | None = None
        self.first_loss = math.nan
        self.epoch_losses: list[float] = []
        self.epoch_computes: list[float] = []
        self.budget = self._fixed() if params.budget == "fixed" else 0.0
        self.umax: float | None = None
        self.records: list[dict[str, Any]] = []

    def _fixed(self) -> float:
        return min(self.p.fixed_mb * 1e6, self.p.cap * self.model_bytes)

    def first(self) -> list[int]:
        """ICS layers of iteration 0 (all scores 0)."""
        zeros = [0.0] * len(self.layer_bytes)
        return self._choose(0, zeros, zeros)

    def next(self, j: int, sums: IterationSums) -> list[int]:
        """ICS layers of iteration ``j + 1`` from iteration ``j``'s sums over all shards."""
        loss = _mean(sums.losses)
        if j == 0:
            self.first_loss = loss
        self.epoch_losses.append(loss)
        self.epoch_computes.append(_mean(sums.computes))
        if self.p.budget == "scheduled" and (j + 1) % self.epoch_iterations == 0:
            self._new_epoch((j + 1) // self.epoch_iterations + 1)
        return self._choose(j + 1, sums.imp, sums.gabs)

    def _new_epoch(self, epoch: int) -> None:
        """Algorithm 1 at the start of ``epoch`` (>= 2) from the epoch just finished."""
        finished = _mean(self.epoch_losses)
        if self.schedule is None:
            t_c = _mean(self.epoch_computes)
            cap = self.p.cap * self.model_bytes
            self.umax = (
                cap
                if self.bandwidth <= 0 or not math.isfinite(t_c)
                else u_max(
                    self.bandwidth,
                    self.p.loss_rate,
                    t_c,
                    self.workers,
                    self.model_bytes,
                    self.p.cap,
                    self.p.loss_form,
                )
            )
            self.schedule = BudgetSchedule(self.umax)
            self.schedule.update(1, self.first_loss if self.first_loss > 0 else 1.0)
            for e in range(2, epoch):  # only when epochs were skipped: keep the order valid
                self.schedule.update(e, finished)
        self.budget = self.schedule.update(epoch, finished if math.isfinite(finished) else 0.0)
        self.epoch_losses, self.epoch_computes = [], []

    def _choose(self, iteration: int, imp: list[float], gabs: list[float]) -> list[int]:
        sel = self.p.selection
        if sel == "importance":
            s = np.asarray(imp, dtype=float)
        elif sel == "topk":
            s = np.asarray(gabs, dtype=float)
        else:
            s = self.rng.permutation(len(imp)).astype(float)
        bitmap = select_ics_layers(s.tolist(), self.layer_bytes, self.budget)
        layers = [int(i) for i in np.flatnonzero(bitmap)]
        ics_bytes = float(sum(self.layer_bytes[i] for i in layers))
        self.records.append(
            {
                "iteration": iteration,
                "epoch": iteration // self.epoch_iterations + 1,
                "budget_bytes": self.budget,
                "ics_bytes": ics_bytes,
                "ics_fraction": ics_bytes / self.model_bytes,
                "ics_layers": layers,
            }
        )
        return layers


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return statistics.fmean(finite) if finite else math.nan

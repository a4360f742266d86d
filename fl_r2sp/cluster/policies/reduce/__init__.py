"""Controllers of the all-reduce family: which ready workers reduce together, and when.

All reduce (BSP), partial reduce (Miao et al., SIGMOD'21) and selective reduce (partial reduce
plus BAG and BPAWR, "Progress and Bandwidth Aware Partial Model Synchronization With Selective
Reduce"; ``docs/paper-notes.md`` §5). The contract is in :mod:`.base`; the runtime and the
simulator (:mod:`fl_r2sp.cluster.sim.reduce.engine`) drive the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from fl_r2sp.cluster.policies.reduce.bag import bag
from fl_r2sp.cluster.policies.reduce.base import Launch, ReduceController
from fl_r2sp.cluster.policies.reduce.bpawr import BpawrConfig, BpawrResult, bpawr
from fl_r2sp.cluster.policies.reduce.params import REDUCE_SCHEMES, ReduceParams
from fl_r2sp.cluster.policies.reduce.progress import EmpiricalProgress, ProgressModel
from fl_r2sp.cluster.policies.reduce.ring import (
    member_weights,
    ring_time,
    weighted_ring_allreduce,
)
from fl_r2sp.cluster.policies.reduce.schemes import (
    AllReduceController,
    PartialReduceController,
    ScriptedReduceController,
)
from fl_r2sp.cluster.policies.reduce.selective import SelectiveReduceController

__all__ = [
    "REDUCE_SCHEMES",
    "AllReduceController",
    "BpawrConfig",
    "BpawrResult",
    "EmpiricalProgress",
    "Launch",
    "PartialReduceController",
    "ProgressModel",
    "ReduceController",
    "ReduceParams",
    "ScriptedReduceController",
    "SelectiveReduceController",
    "bag",
    "bpawr",
    "make_reduce_controller",
    "member_weights",
    "ring_time",
    "weighted_ring_allreduce",
]


def make_reduce_controller(
    params: ReduceParams,
    bandwidth: Sequence[float],
    model_bytes: float = 500e6,
    alpha: float = 1e-3,
    progress: ProgressModel | None = None,
    approx_time: bool = False,
) -> ReduceController:
    """Build the controller of ``params.scheme`` for ``len(bandwidth)`` workers.

    Parameters
    ----------
    params : ReduceParams
        Scheme and knobs (validated here).
    bandwidth : sequence of float
        The controller's bandwidth estimate per worker, bytes/s (> 0).
    model_bytes, alpha, progress, approx_time
        Selective reduce only (see :class:`SelectiveReduceController`); defaults 500 MB, 1 ms,
        cold-start empirical CDF, exact ring time.

    Raises
    ------
    ValueError
        On a bad knob or bandwidth.
    """
    params.validate()
    if params.scheme == "allreduce":
        return AllReduceController(params, bandwidth)
    if params.scheme == "partial":
        return PartialReduceController(params, bandwidth)
    return SelectiveReduceController(params, bandwidth, model_bytes, alpha, progress, approx_time)

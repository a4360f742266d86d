"""Coordinator policies of the cluster mode: BSP, ASP, SSP, R²SP (with batch tuning), SAFA.

:func:`make_policy` builds one from validated :class:`SchemeParams`; the runtime and the
virtual-time twin call the same object through the :class:`CoordinatorPolicy` protocol
(:mod:`fl_r2sp.cluster.policies.common.base`). Every policy records its decisions in ``trace``.
"""

from __future__ import annotations

from fl_r2sp.cluster.policies.common.base import CoordinatorPolicy, Permission, PushReport
from fl_r2sp.cluster.policies.common.trace import TracedPolicy
from fl_r2sp.cluster.policies.osp.coordinator import OSP_POLICIES, OSPCoordinatorPolicy
from fl_r2sp.cluster.policies.ps.asp import ASPPolicy
from fl_r2sp.cluster.policies.ps.bsp import BSPPolicy
from fl_r2sp.cluster.policies.ps.params import OSP_SCHEMES, SCHEMES, SchemeParams
from fl_r2sp.cluster.policies.ps.r2sp import R2SPPolicy
from fl_r2sp.cluster.policies.ps.safa import SAFAPolicy
from fl_r2sp.cluster.policies.ps.ssp import SSPPolicy
from fl_r2sp.cluster.policies.ps.tuning import BatchTuner, idle_rule, proportional_rule

__all__ = [
    "SCHEMES",
    "ASPPolicy",
    "BSPPolicy",
    "BatchTuner",
    "OSPCoordinatorPolicy",
    "CoordinatorPolicy",
    "Permission",
    "PushReport",
    "R2SPPolicy",
    "SAFAPolicy",
    "SSPPolicy",
    "SchemeParams",
    "TracedPolicy",
    "idle_rule",
    "make_policy",
    "proportional_rule",
]


def make_policy(params: SchemeParams, num_workers: int, batch_size: int) -> TracedPolicy:
    """Build the coordinator policy of ``params.scheme`` for ``num_workers`` workers.

    Parameters
    ----------
    params : SchemeParams
        Scheme and knobs (validated here).
    num_workers : int
        N >= 1.
    batch_size : int
        Initial batch size of every worker (>= 1).

    Raises
    ------
    ValueError
        On a bad knob, N < 1 or a batch size < 1.
    """
    params.validate()
    if params.scheme in OSP_SCHEMES:
        return OSP_POLICIES[params.scheme](num_workers, batch_size)
    if params.scheme == "bsp":
        return BSPPolicy(num_workers, batch_size)
    if params.scheme == "asp":
        return ASPPolicy(num_workers, batch_size)
    if params.scheme == "ssp":
        return SSPPolicy(num_workers, batch_size, params.ssp_bound)
    if params.scheme == "r2sp":
        return R2SPPolicy(
            num_workers,
            batch_size,
            params.gap_factor,
            params.ema_weight,
            params.tuning,
            params.tuning_warmup,
            params.t_measure,
        )
    return SAFAPolicy(
        num_workers,
        batch_size,
        params.safa_staleness_bound,
        params.safa_quorum,
        params.safa_deadline_s,
    )

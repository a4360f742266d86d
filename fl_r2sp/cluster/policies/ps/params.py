"""Scheme parameters of the cluster coordinator policies, validated before any rank starts.

Defaults and where they come from (``docs/paper-notes.md``, cluster part):

* ``gap_factor`` r = 0.8: the paper's default relaxation of the R²SP gap ``T/N`` to ``r·T/N``.
* ``ema_weight`` = 0.1: the weight of the latest observation in the EMA of the iteration time
  ``T``. The cluster paper gives no weight; 0.1 is the FL-R²SP paper's.
* ``ssp_bound`` s = 5: the SSP progress-gap bound of the paper's experiments (off-by-one in
  :mod:`fl_r2sp.cluster.policies.ps.ssp`).
* ``tuning`` = "none": batch-size tuning (R²SP only); "idle" is the rule that reproduces the
  paper's Table III, "proportional" the alternative fitting its Fig. 5 text.
* ``safa_staleness_bound`` = 5 and ``safa_quorum`` = 0.5: SAFA's lag tolerance and the fraction
  of live workers that closes a round. The ToN paper gives no SAFA parameters; these are ours
  (the bound equals the SSP bound of the same experiments; the quorum makes the 4 undelayed
  workers of the 8-worker transformer setup the synchronous set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Scheme names accepted by :func:`fl_r2sp.cluster.policies.make_policy`.
SCHEMES: tuple[str, ...] = ("bsp", "asp", "ssp", "r2sp", "safa", "osp", "osp-s", "osp-c")
#: OSP variants (:mod:`fl_r2sp.cluster.runtime.osp.rank`): "osp" = "osp-s" (standalone PS),
#: "osp-c" (each PS co-located in the process of worker s).
OSP_SCHEMES: tuple[str, ...] = ("osp", "osp-s", "osp-c")
#: Batch-size tuning rules (R²SP only).
TUNING_RULES: tuple[str, ...] = ("none", "idle", "proportional")
#: Which EMA feeds R²SP's period T: active time (compute + comm) or the full grant-to-grant cycle.
T_MEASURES: tuple[str, ...] = ("active", "cycle")


@dataclass(frozen=True)
class SchemeParams:
    """Which coordination scheme, and its knobs.

    Parameters
    ----------
    scheme : str
        One of :data:`SCHEMES`: "bsp", "asp", "ssp", "r2sp", "safa".
    gap_factor : float, default 0.8
        R²SP relaxation factor r in [0, 1]: consecutive permissions are >= r·T/N apart.
    ema_weight : float, default 0.1
        Weight in (0, 1] of the latest observation in R²SP's EMAs of the iteration time.
    ssp_bound : int, default 5
        SSP bound s >= 0 (s = 0 is BSP's timing).
    tuning : str, default "none"
        Batch-size tuning rule of R²SP: "none", "idle" (b + v·t_block) or "proportional"
        (b·v/v_slowest).
    tuning_warmup : int, default 5
        Iterations every live worker completes before the batch sizes are tuned (>= 1).
    t_measure : str, default "active"
        Which of R²SP's two logged T estimates sets the gap: "active" (compute + comm,
        blocking excluded; the paper's definition) or "cycle" (grant-to-grant time).
    safa_staleness_bound : int, default 5
        SAFA lag tolerance (>= 0): a straggler's update is absorbed while the rounds closed
        since its pull are <= this bound, else it is discarded and the worker resyncs.
    safa_quorum : float, default 0.5
        SAFA: fraction in (0, 1] of the live workers whose fresh pushes close a round.
    safa_deadline_s : float, default inf
        SAFA: a round also closes this long after it opened if at least one fresh push arrived
        (seconds on the caller's clock, > 0; inf = quorum only).
    osp_selection, osp_lgp, osp_budget : str, bool, str, default "importance", True, "scheduled"
        OSP layer choice ("importance", "random", "topk"), LGP on/off, S(G^u) rule
        ("scheduled" = Algorithm 1 per epoch, "fixed" = ``osp_fixed_mb``); see
        :class:`fl_r2sp.cluster.policies.osp.rules.OSPParams`.
    osp_fixed_mb : float, default 0.0
        Fixed S(G^u) in MB (10^6 bytes), capped at ``osp_cap`` of the model.
    osp_cap : float, default 0.8
        U_max cap as a fraction of the model size (the paper's 80%).
    osp_loss_form : str, default "printed"
        Eq. 5 as printed, ``b(1+lr)·T_C/N``, or "divided", ``b·T_C/(N(1+lr))``.
    osp_bandwidth_mb_s : float, default 0.0
        b of Eq. 5 in MB/s (0 = the PS bandwidth cap; with neither, U_max is the cap).
    osp_loss_rate : float, default 0.0
        lr of Eq. 5 (packet loss rate), in [0, 1).
    osp_epoch_iterations : int, default 0
        Iterations per epoch of Algorithm 1's schedule (0 = one pass of the N workers over the
        training set).
    """

    scheme: str
    gap_factor: float = 0.8
    ema_weight: float = 0.1
    ssp_bound: int = 5
    tuning: str = "none"
    tuning_warmup: int = 5
    t_measure: str = "active"
    safa_staleness_bound: int = 5
    safa_quorum: float = 0.5
    safa_deadline_s: float = math.inf
    osp_selection: str = "importance"
    osp_lgp: bool = True
    osp_budget: str = "scheduled"
    osp_fixed_mb: float = 0.0
    osp_cap: float = 0.8
    osp_loss_form: str = "printed"
    osp_bandwidth_mb_s: float = 0.0
    osp_loss_rate: float = 0.0
    osp_epoch_iterations: int = 0

    def validate(self) -> SchemeParams:
        """Check every knob; return ``self`` so calls chain.

        Raises
        ------
        ValueError
            Naming the bad knob, its value and what is allowed.
        """
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {self.scheme!r}; choose one of {', '.join(SCHEMES)}")
        if not (isinstance(self.gap_factor, int | float) and 0.0 <= self.gap_factor <= 1.0):
            raise ValueError(f"gap_factor r must lie in [0, 1], got {self.gap_factor!r}")
        if not (isinstance(self.ema_weight, int | float) and 0.0 < self.ema_weight <= 1.0):
            raise ValueError(f"ema_weight must lie in (0, 1], got {self.ema_weight!r}")
        _check_int("ssp_bound", self.ssp_bound, 0)
        _check_int("tuning_warmup", self.tuning_warmup, 1)
        _check_int("safa_staleness_bound", self.safa_staleness_bound, 0)
        if self.tuning not in TUNING_RULES:
            raise ValueError(f"unknown tuning {self.tuning!r}; choose one of {TUNING_RULES}")
        if self.tuning != "none" and self.scheme != "r2sp":
            raise ValueError(
                f"batch-size tuning rides on R²SP's permissions; scheme {self.scheme!r} "
                f"needs tuning='none', got {self.tuning!r}"
            )
        if self.t_measure not in T_MEASURES:
            raise ValueError(f"unknown t_measure {self.t_measure!r}; choose one of {T_MEASURES}")
        if not (isinstance(self.safa_quorum, int | float) and 0.0 < self.safa_quorum <= 1.0):
            raise ValueError(f"safa_quorum must lie in (0, 1], got {self.safa_quorum!r}")
        if not (isinstance(self.safa_deadline_s, int | float) and self.safa_deadline_s > 0):
            raise ValueError(f"safa_deadline_s must be > 0 seconds, got {self.safa_deadline_s!r}")
        self._check_osp()
        return self

    def _check_osp(self) -> None:
        from fl_r2sp.cluster.policies.osp.rules import OSPParams

        OSPParams(selection=self.osp_selection, lgp=self.osp_lgp, budget=self.osp_budget,
                  fixed_budget_bytes=self.osp_fixed_mb * 1e6, cap_fraction=self.osp_cap,
                  loss_form=self.osp_loss_form).validate()  # fmt: skip
        if not isinstance(self.osp_lgp, bool):
            raise ValueError(f"osp_lgp must be a bool, got {self.osp_lgp!r}")
        if not (isinstance(self.osp_bandwidth_mb_s, int | float) and self.osp_bandwidth_mb_s >= 0
                and math.isfinite(self.osp_bandwidth_mb_s)):  # fmt: skip
            raise ValueError(f"osp_bandwidth_mb_s must be >= 0, got {self.osp_bandwidth_mb_s!r}")
        if not (isinstance(self.osp_loss_rate, int | float) and 0 <= self.osp_loss_rate < 1):
            raise ValueError(f"osp_loss_rate must lie in [0, 1), got {self.osp_loss_rate!r}")
        _check_int("osp_epoch_iterations", self.osp_epoch_iterations, 0)


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")

"""Parameter records of the schemes: every scheme knob's default is written here, once.

The policies take these frozen records; :class:`fl_r2sp.fl.config.RunConfig`
takes its scheme defaults from them and builds them from a run config
(:meth:`~fl_r2sp.fl.config.RunConfig.scheme_params`). Each record validates
itself when built, naming the field and its run-config key, so the checks
live in one place: a record that exists is valid.

* :class:`GroupParams`: FL-R²SP's groups and round-robin application (BSP
  reads ``fraction`` and ``aggregation``);
* :class:`OutlierParams`: the cosine outlier filter (FL-R²SP, BSP);
* :class:`AsyncParams`: ASP / FedAsync mixing and FedBuff's buffer, with the
  staleness function :class:`~fl_r2sp.fl.policies.staleness.StalenessFn`;
* :data:`MAX_FAILURES`, :data:`BSP_SAMPLING`: the two single knobs;
* :class:`SchemeParams`: all of the above for one run (what the factory
  hands to a policy's ``from_scheme``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from fl_r2sp.fl.policies._records import build, keyed, keys_of, nested, require, require_choice
from fl_r2sp.fl.policies.aggregation import AggregationKind
from fl_r2sp.fl.policies.outlier_rules import OutlierRuleKind
from fl_r2sp.fl.policies.robust import RobustParams
from fl_r2sp.fl.policies.scoring import CosineReferenceKind
from fl_r2sp.fl.policies.staleness import StalenessFn

BspSamplingKind = Literal["first-c", "sample"]
AspMixingKind = Literal["average", "fedasync"]

#: Consecutive failed jobs re-sent to a client before it is dropped (key ``max-failures``).
MAX_FAILURES = 3
#: Consecutive rejected updates a client may send before it is dropped (key ``max-rejections``).
MAX_REJECTIONS = 3
#: BSP's choice of clients per round (key ``bsp-sampling``; see ``BSPPolicy``).
BSP_SAMPLING: BspSamplingKind = "first-c"


def check_max_failures(value: int) -> None:
    """Raise ``ValueError`` unless ``value`` (``max-failures``) is >= 1."""
    if not value >= 1:
        raise ValueError(
            f"invalid max_failures={value!r} (run-config key max-failures): must be >= 1"
        )


def check_max_rejections(value: int) -> None:
    """Raise ``ValueError`` unless ``value`` (``max-rejections``) is >= 0."""
    if not value >= 0:
        raise ValueError(
            f"invalid max_rejections={value!r} (run-config key max-rejections): must be >= 0"
        )


def check_bsp_sampling(value: str) -> None:
    """Raise ``ValueError`` unless ``value`` (``bsp-sampling``) is a BSP sampling mode."""
    choices = get_args(BspSamplingKind)
    if value not in choices:
        raise ValueError(
            f"invalid bsp sampling={value!r} (run-config key bsp-sampling): not one of "
            + ", ".join(map(repr, choices))
        )


@dataclass(frozen=True)
class GroupParams:
    """FL-R²SP's groups and their round-robin application.

    Attributes
    ----------
    num_groups : int, default 4
        M >= 1; client ``cid`` is in group ``cid % M`` (the policy checks M <= clients).
    fraction : float, default 0.75
        C in (0, 1]: a group round aggregates the first ``ceil(C * active)`` updates.
    gap_factor : float, default 1.0
        r >= 0: consecutive applications are at least ``r * T / M`` apart.
    ema_weight : float, default 0.1
        Weight in (0, 1] of the latest round time in the EMA ``T``.
    initial_round_time : float, default 0.0
        ``T`` (>= 0) before the first measurement (0: no gap until then).
    strict_order : bool, default True
        Fixed group order (paper); False lets any collected group apply.
    aggregation : {"mean", "weighted", "median", "trimmed-mean", "krum"}, default "mean"
        Intra-group aggregate: unweighted mean (paper), by ``num_examples``, or a
        robust reducer (:mod:`fl_r2sp.fl.policies.robust`); the cosine filter acts on top.
    robust : RobustParams, default RobustParams()
        Trim share and Krum's f and m (keys ``trim-beta``, ``krum-malicious``,
        ``krum-select``; :class:`~fl_r2sp.fl.policies.robust.RobustParams` states each default).
    """

    num_groups: int = keyed(4, "num-groups")
    fraction: float = keyed(0.75, "fraction")
    gap_factor: float = keyed(1.0, "gap-factor")
    ema_weight: float = keyed(0.1, "ema-weight")
    initial_round_time: float = keyed(0.0, "initial-round-time")
    strict_order: bool = keyed(True, "strict-order")
    aggregation: AggregationKind = keyed("mean", "aggregation")
    robust: RobustParams = nested(RobustParams, RobustParams())

    def __post_init__(self) -> None:
        require(self, "num_groups", self.num_groups >= 1, "need at least one group")
        require(self, "fraction", 0.0 < self.fraction <= 1.0, "C must lie in (0, 1]")
        require(self, "gap_factor", self.gap_factor >= 0, "r must be >= 0")
        require(self, "ema_weight", 0.0 < self.ema_weight <= 1.0, "must lie in (0, 1]")
        require(self, "initial_round_time", self.initial_round_time >= 0, "must be >= 0")
        require_choice(self, "aggregation", AggregationKind)


@dataclass(frozen=True)
class OutlierParams:
    """The cosine outlier filter of FL-R²SP (also used by BSP).

    Attributes
    ----------
    enabled : bool, default False
        Blacklist clients (scores are computed and logged either way). Off as the filter
        rules' measurement found (``experiments/flr2sp/filter_rules.py``): no rule met the
        default's criterion on the laptop CIFAR-10 partitions and the main job's (digits)
        together; ``relative`` met it on CIFAR-10 but lost accuracy on the main job
        (``docs/paper-notes.md`` §2.7).
    cosine_threshold : float, default 0.5
        β in [-1, 1]: a score below it counts as an outlier round.
    rounds : int, default 3
        Consecutive low scores (>= 1) that blacklist a client.
    reference : str, default "global-change"
        Reference delta of the score (:mod:`fl_r2sp.fl.policies.scoring`): the paper's
        "global update" ``w_new - start_G`` by default (``docs/architecture.md`` §6).
    warmup : int, default 0
        Group rounds (>= 0) scored by nobody at the start (paper: 0); their stragglers
        are not scored either.
    rule : {"paper", "relative", "oracle"}, default "relative"
        What counts as a low score (:mod:`fl_r2sp.fl.policies.outlier_rules`): below β
        (the paper's rule, ``paper``), below the group round's median by more than ``mad_k``
        robust deviations (``relative``, the best rule measured), or nothing (``oracle``
        bans the known outliers at the start instead).
    mad_k : float, default 3.0
        ``relative``: k > 0, robust deviations (1.4826 x MAD) below the median that are low.
    mad_floor : float, default 0.1
        ``relative``: least robust deviation (>= 0, cosine units), so closely agreeing
        groups do not flag a small dip.
    cap : float, default 0.25
        ``relative``: share in [0, 1] of a group's members that may be blacklisted, and
        never more than ``members - ceil(C * members)``.
    probation : int, default 0
        ``relative``: a blacklisted client is sent its group's model again after this many
        group rounds, scored without being aggregated, and readmitted when its score is
        not low (0 = never).
    score_stragglers : bool, default False
        Also score stragglers against their group's latest reference delta.
    all_references : bool, default False
        Also record each score under every reference (``cosine_<kind>`` fields of
        ``client_score``; :mod:`fl_r2sp.fl.policies.reference_scores`); decisions
        still use ``reference`` only.
    """

    enabled: bool = keyed(False, "outlier-filter")
    cosine_threshold: float = keyed(0.5, "cosine-threshold")
    rounds: int = keyed(3, "outlier-rounds")
    reference: CosineReferenceKind = keyed("global-change", "cosine-reference")
    warmup: int = keyed(0, "outlier-warmup")
    rule: OutlierRuleKind = keyed("relative", "outlier-rule")
    mad_k: float = keyed(3.0, "outlier-mad-k")
    mad_floor: float = keyed(0.1, "outlier-mad-floor")
    cap: float = keyed(0.25, "outlier-cap")
    probation: int = keyed(0, "outlier-probation")
    score_stragglers: bool = keyed(False, "score-stragglers")
    all_references: bool = keyed(False, "score-all-references")

    def __post_init__(self) -> None:
        ok = -1.0 <= self.cosine_threshold <= 1.0
        require(self, "cosine_threshold", ok, "a cosine lies in [-1, 1]")
        require(self, "rounds", self.rounds >= 1, "must be >= 1")
        require_choice(self, "reference", CosineReferenceKind)
        require(self, "warmup", self.warmup >= 0, "must be >= 0")
        require_choice(self, "rule", OutlierRuleKind)
        require(self, "mad_k", self.mad_k > 0, "k must be > 0")
        require(self, "mad_floor", self.mad_floor >= 0, "must be >= 0 (cosine units)")
        require(self, "cap", 0.0 <= self.cap <= 1.0, "a share of a group lies in [0, 1]")
        require(self, "probation", self.probation >= 0, "group rounds, >= 0 (0 = off)")


@dataclass(frozen=True)
class AsyncParams:
    """ASP / FedAsync mixing and FedBuff's buffered step.

    Attributes
    ----------
    mixing : {"average", "fedasync"}, default "average"
        ASP: ``(N'-1)/N'`` averaging, or FedAsync's staleness-weighted alpha.
    alpha : float, default 0.6
        FedAsync mixing weight in (0, 1] before staleness.
    staleness : StalenessFn, default StalenessFn("polynomial") (a = 0.5)
        ``s(t)`` of FedAsync and FedBuff; polynomial ``(1 + t)^-a`` is FedBuff's.
    buffer_size : int, default 10
        FedBuff: K >= 1 updates per server step.
    server_lr : float, default 1.0
        FedBuff's server learning rate (> 0) on the mean buffered delta.
    """

    mixing: AspMixingKind = keyed("average", "asp-mixing")
    alpha: float = keyed(0.6, "mixing-alpha")
    staleness: StalenessFn = nested(StalenessFn, StalenessFn("polynomial"))
    buffer_size: int = keyed(10, "buffer-size")
    server_lr: float = keyed(1.0, "server-lr")

    def __post_init__(self) -> None:
        require_choice(self, "mixing", AspMixingKind)
        require(self, "alpha", 0.0 < self.alpha <= 1.0, "must lie in (0, 1]")
        require(self, "buffer_size", self.buffer_size >= 1, "K must be >= 1")
        require(self, "server_lr", self.server_lr > 0, "must be > 0")


@dataclass(frozen=True, kw_only=True)
class SchemeParams:
    """Every scheme knob of one run (built by ``RunConfig.scheme_params``; no defaults).

    Attributes
    ----------
    group : GroupParams
    outliers : OutlierParams
    asynchronous : AsyncParams
    bsp_sampling : {"first-c", "sample"}
    max_failures : int
        >= 1.
    max_rejections : int
        >= 0 (FL-R²SP and BSP; the other schemes count a rejection as a failure).
    seed : int
        The run's seed (BSP's per-round sample).
    """

    group: GroupParams = nested(GroupParams)
    outliers: OutlierParams = nested(OutlierParams)
    asynchronous: AsyncParams = nested(AsyncParams)
    bsp_sampling: BspSamplingKind = field(metadata={"key": "bsp-sampling"})
    max_failures: int = field(metadata={"key": "max-failures"})
    max_rejections: int = field(metadata={"key": "max-rejections"})
    seed: int = field(metadata={"key": "seed"})

    def __post_init__(self) -> None:
        check_bsp_sampling(self.bsp_sampling)
        check_max_failures(self.max_failures)
        check_max_rejections(self.max_rejections)

    @classmethod
    def from_keys(cls, values: Mapping[str, Any]) -> SchemeParams:
        """Build (and validate) from run-config keys, e.g. ``RunConfig.to_run_config()``."""
        return build(cls, values)


def scheme_defaults() -> dict[str, Any]:
    """Run-config key -> default of every scheme knob (``seed`` has none here)."""
    out = keys_of(SchemeParams)
    out.update({"bsp-sampling": BSP_SAMPLING, "max-failures": MAX_FAILURES})
    out["max-rejections"] = MAX_REJECTIONS
    del out["seed"]
    return out

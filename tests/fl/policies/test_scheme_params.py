"""One source per setting: the parameter records, RunConfig and the scheme registry agree."""

from __future__ import annotations

import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.strategy import FLR2SP, STRATEGIES, EventDrivenStrategy
from fl_r2sp.fl.policies.asp import FedAsyncPolicy
from fl_r2sp.fl.policies.bsp import BSPPolicy
from fl_r2sp.fl.policies.factory import make_policy
from fl_r2sp.fl.policies.fedbuff import FedBuffPolicy
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import (
    AsyncParams,
    GroupParams,
    OutlierParams,
    SchemeParams,
    scheme_defaults,
)
from fl_r2sp.fl.policies.registry import SCHEMES, scheme
from fl_r2sp.fl.policies.staleness import StalenessFn


def test_runconfig_takes_every_scheme_default_from_the_records() -> None:
    defaults = scheme_defaults()
    # 7 group + 3 robust + 12 outlier + 7 async + bsp-sampling + max-failures + max-rejections
    assert len(defaults) == 32
    keys = RunConfig.keys()
    assert {k: keys[k] for k in defaults} == defaults
    # Spot checks against the paper's / FedBuff's values, written out by hand.
    assert defaults["fraction"] == 0.75 and defaults["cosine-threshold"] == 0.5
    assert defaults["staleness"] == "polynomial" and defaults["staleness-a"] == 0.5
    assert defaults["max-failures"] == 3 and defaults["buffer-size"] == 10
    assert defaults["max-rejections"] == 3


def test_scheme_params_are_read_from_the_config() -> None:
    cfg = RunConfig(
        num_partitions=128,
        group_size=16,
        fraction=0.5,
        outlier_warmup=2,
        staleness="hinge",
        staleness_b=2.0,
        bsp_sampling="sample",
        seed=9,
    )
    p = cfg.scheme_params()
    assert p.group == GroupParams(num_groups=8, fraction=0.5)  # M from group-size: 128 / 16
    assert p.outliers == OutlierParams(warmup=2)
    assert p.asynchronous == AsyncParams(staleness=StalenessFn("hinge", 0.5, 2.0))
    assert (p.bsp_sampling, p.max_failures, p.seed) == ("sample", 3, 9)
    assert RunConfig().scheme_params() == SchemeParams(
        group=GroupParams(),
        outliers=OutlierParams(),
        asynchronous=AsyncParams(),
        bsp_sampling="first-c",
        max_failures=3,
        max_rejections=3,
        seed=0,
    )


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"cosine_threshold": 2.0}, r"OutlierParams.cosine_threshold=2.0 \(run-config key cosine"),
        ({"outlier_rounds": 0}, r"OutlierParams.rounds=0 \(run-config key outlier-rounds\)"),
        ({"ema_weight": 0.0}, r"GroupParams.ema_weight=0.0 \(run-config key ema-weight\)"),
        ({"mixing_alpha": 1.5}, r"AsyncParams.alpha=1.5 \(run-config key mixing-alpha\)"),
        ({"staleness_a": -1.0}, r"StalenessFn.a=-1.0 \(run-config key staleness-a\)"),
        ({"cosine_reference": "cmfl"}, "cosine-reference.*not one of 'group'"),
        ({"bsp_sampling": "all"}, "bsp-sampling"),
        ({"max_failures": 0}, "max-failures"),
        ({"strategy": "ssp"}, "strategy='ssp'.*'fl-r2sp', 'bsp', 'asp', 'fedasync', 'fedbuff'"),
    ],
)
def test_the_records_validate_the_scheme_knobs_of_a_config(changes: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        RunConfig().replace(**changes)


def test_records_reject_bad_values_when_built_directly() -> None:
    with pytest.raises(ValueError, match="GroupParams.gap_factor"):
        GroupParams(gap_factor=-1.0)
    with pytest.raises(ValueError, match="AsyncParams.buffer_size"):
        AsyncParams(buffer_size=0)
    with pytest.raises(ValueError, match="bsp-sampling"):
        BSPPolicy(4, sampling="all", seed=0)  # type: ignore[arg-type]


def test_one_registry_names_policies_and_flower_classes() -> None:
    assert list(SCHEMES) == ["fl-r2sp", "bsp", "asp", "fedasync", "fedbuff", "fedavg"]
    for name, row in SCHEMES.items():
        assert row.name == name
        if row.policy is not None:
            assert row.policy.name == name
            assert STRATEGIES[name].__name__ == row.flower_class
            assert STRATEGIES[name].scheme() is row
    assert SCHEMES["fedavg"].policy is None and "fedavg" not in STRATEGIES
    with pytest.raises(ValueError, match="unknown strategy 'ssp'; known: fl-r2sp, bsp"):
        scheme("ssp")


def test_flower_classes_find_their_row_through_subclasses() -> None:
    class Mine(FLR2SP):
        pass

    assert Mine().cfg.strategy == "fl-r2sp"

    class Unregistered(EventDrivenStrategy):
        pass

    with pytest.raises(TypeError, match="no registered scheme"):
        Unregistered()


def test_factory_passes_every_knob_through() -> None:
    cfg = RunConfig(
        num_partitions=8,
        num_groups=2,
        fraction=0.5,
        gap_factor=2.0,
        ema_weight=0.3,
        initial_round_time=1.5,
        strict_order=False,
        aggregation="weighted",
        outlier_filter=False,
        cosine_threshold=0.2,
        outlier_rounds=5,
        cosine_reference="group-loo",
        outlier_warmup=1,
        score_stragglers=True,
        max_failures=4,
    )
    fl = make_policy(cfg, range(8), frozenset({3}))
    assert isinstance(fl, FLR2SPPolicy)
    assert (fl.num_groups, fl.fraction, fl.gap_factor, fl.strict_order, fl.aggregation) == (
        2,
        0.5,
        2.0,
        False,
        "weighted",
    )
    assert (fl.ema.weight, fl.ema.value) == (0.3, 1.5)
    assert (fl.filter.enabled, fl.filter.threshold, fl.filter.rounds) == (False, 0.2, 5)
    assert (fl.cosine_reference, fl.outlier_warmup, fl.score_stragglers) == ("group-loo", 1, True)
    assert fl.failures.max_failures == 4 and fl.filter.known_outliers == frozenset({3})
    # BSP reads C and the aggregation only: one group, no gap, the EMA at its defaults.
    bsp = make_policy(cfg.replace(strategy="bsp", bsp_sampling="sample", seed=5), range(8))
    assert isinstance(bsp, BSPPolicy)
    assert (bsp.num_groups, bsp.gap_factor, bsp.fraction, bsp.aggregation) == (
        1,
        0.0,
        0.5,
        "weighted",
    )
    assert (bsp.ema.weight, bsp.ema.value, bsp.sampling, bsp.seed) == (0.1, 0.0, "sample", 5)
    cfg = cfg.replace(strategy="fedasync", mixing_alpha=0.4, staleness="constant")
    fa = make_policy(cfg, range(8))
    assert isinstance(fa, FedAsyncPolicy) and (fa.mixing, fa.alpha) == ("fedasync", 0.4)
    assert fa.staleness == StalenessFn("constant")
    fb = make_policy(cfg.replace(strategy="fedbuff", buffer_size=3, server_lr=0.5), range(8))
    assert isinstance(fb, FedBuffPolicy)
    assert (fb.buffer_size, fb.server_lr, fb.alpha, fb.failures.max_failures) == (3, 0.5, 1.0, 4)


def test_fedavg_has_no_policy() -> None:
    with pytest.raises(ValueError, match="'fedavg' has no policy"):
        make_policy(RunConfig(strategy="fedavg"), range(4))

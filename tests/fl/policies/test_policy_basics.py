"""Aggregation, staleness functions and the cosine outlier filter (hand-computed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fl_r2sp.fl.policies.aggregation import aggregate, mean, mix, weighted_mean
from fl_r2sp.fl.policies.base import Update
from fl_r2sp.fl.policies.groups import RoundTimeEMA, fraction_need
from fl_r2sp.fl.policies.outliers import OutlierFilter, cosine
from fl_r2sp.fl.policies.params import OutlierParams
from fl_r2sp.fl.policies.staleness import StalenessFn


def v(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=np.float32)


def test_mean_and_weighted_mean_are_float32() -> None:
    m = mean([v(1, 2), v(3, 6)])
    assert m.dtype == np.float32
    np.testing.assert_array_equal(m, v(2, 4))
    np.testing.assert_array_equal(weighted_mean([v(1, 2), v(4, 8)], [2, 1]), v(2, 4))


def test_aggregate_mean_vs_weighted() -> None:
    ups = [Update(0, v(0, 0), 1, 0), Update(1, v(3, 3), 2, 0)]
    np.testing.assert_array_equal(aggregate(ups, "mean"), v(1.5, 1.5))
    np.testing.assert_array_equal(aggregate(ups, "weighted"), v(2, 2))
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(ups, "geometric-median")  # type: ignore[arg-type]


def test_aggregation_errors_are_explicit() -> None:
    with pytest.raises(ValueError, match="empty"):
        mean([])
    with pytest.raises(ValueError, match="shape"):
        mean([v(1, 2), v(1, 2, 3)])
    with pytest.raises(ValueError, match="positive num_examples"):
        weighted_mean([v(1)], [0])


def test_mix() -> None:
    np.testing.assert_array_equal(mix(v(4, 0), v(0, 8), 0.25), v(3, 2))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mix(v(1), v(1), 1.5)


def test_staleness_functions() -> None:
    assert StalenessFn()(7) == 1.0
    poly = StalenessFn("polynomial", a=0.5)
    assert poly(0) == 1.0
    assert poly(3) == pytest.approx(0.5)  # (1 + 3) ** -0.5
    hinge = StalenessFn("hinge", a=0.5, b=2)
    assert hinge(2) == 1.0
    assert hinge(4) == pytest.approx(0.5)  # 1 / (0.5 * (4 - 2) + 1)
    with pytest.raises(ValueError, match="staleness"):
        StalenessFn("linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=">= 0"):
        poly(-1)


def test_cosine() -> None:
    assert cosine(v(1, 0), v(2, 0)) == pytest.approx(1.0)
    assert cosine(v(1, 0), v(0, 3)) == pytest.approx(0.0)
    assert cosine(v(1, 1), v(-1, -1)) == pytest.approx(-1.0)
    assert cosine(v(0, 0), v(1, 0)) == 0.0  # no movement: no evidence


def test_outlier_filter_streak_reset_and_precision_recall() -> None:
    f = OutlierFilter(
        OutlierParams(enabled=True, rule="paper", cosine_threshold=0.5, rounds=3),
        frozenset({2, 3}),
    )
    assert math.isnan(f.precision())
    assert not f.observe(2, 0.1, 1.0)
    assert not f.observe(2, 0.4, 2.0)
    assert not f.observe(2, 0.5, 3.0)  # exactly beta is not low: streak resets
    assert f.streak(2) == 0
    assert not f.observe(2, -1.0, 4.0)
    assert not f.observe(2, 0.0, 5.0)
    assert f.observe(2, 0.49, 6.0)  # third consecutive low score
    assert f.blacklisted == {2} and f.blacklist_times == {2: 6.0}
    assert not f.observe(2, 0.0, 7.0)  # already blacklisted
    for t in (1.0, 2.0, 3.0):
        f.observe(0, 0.0, t)  # a false positive
    assert f.precision() == pytest.approx(0.5)
    assert f.recall() == pytest.approx(0.5)
    s = f.summary()
    assert s["blacklisted"] == [0, 2] and s["blacklist_precision"] == pytest.approx(0.5)


def test_disabled_filter_never_blacklists() -> None:
    f = OutlierFilter(OutlierParams(enabled=False))
    for t in range(5):
        assert not f.observe(1, -1.0, float(t))
    assert f.streak(1) == 5 and not f.blacklisted
    assert f.summary()["blacklist_recall"] is None


def test_fraction_need_and_ema() -> None:
    assert [fraction_need(0.75, n) for n in (2, 4, 8, 16)] == [2, 3, 6, 12]
    assert fraction_need(0.3, 10) == 3  # 0.3 * 10 = 3.0000000000000004 in floats
    assert fraction_need(0.5, 0) == 0
    ema = RoundTimeEMA(0.1, 0.0)
    assert ema.update(2.0) == 2.0  # first measurement taken as is
    assert ema.update(1.0) == pytest.approx(1.9)
    seeded = RoundTimeEMA(0.1, 1.0)
    assert seeded.update(2.0) == pytest.approx(1.1)

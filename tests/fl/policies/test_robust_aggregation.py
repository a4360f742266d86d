"""Robust group aggregates: hand-computed values, equality with Flower's own rules, policies.

The reducers live in the Flower-free policy layer (fl_r2sp.fl.policies.robust);
this test is where they meet Flower's functions (the test may import flwr).
"""

from __future__ import annotations

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict
from flwr.server.strategy.aggregate import (
    aggregate_krum,
    aggregate_median,
    aggregate_trimmed_avg,
)
from flwr.serverapp.strategy.fedtrimmedavg import trim_mean
from flwr.serverapp.strategy.multikrum import select_multikrum

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.aggregation import aggregate, coefficients
from fl_r2sp.fl.policies.base import Update
from fl_r2sp.fl.policies.bsp import BSPPolicy
from fl_r2sp.fl.policies.params import GroupParams
from fl_r2sp.fl.policies.robust import (
    RobustParams,
    coordinate_median,
    krum_scores,
    krum_select,
    trimmed_mean,
)
from fl_r2sp.fl.policies.scripted import ScriptedDriver

V = [np.array(v, np.float32) for v in ([1, 10], [2, 20], [100, -5], [3, 30], [4, 40])]


def updates(vectors: list[np.ndarray], counts: list[int] | None = None) -> list[Update]:
    counts = counts or [1] * len(vectors)
    return [Update(i, v, n, 0) for i, (v, n) in enumerate(zip(vectors, counts, strict=True))]


def random_inputs(seed: int, n: int, d: int = 37) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=d).astype(np.float32) for _ in range(n)]


# -- hand-computed ---------------------------------------------------------------------
def test_median_and_trimmed_mean_by_hand() -> None:
    assert coordinate_median(V).tolist() == [3.0, 20.0]
    # beta 0.2 of 5 cuts int(1.0) = 1 value per tail: [2, 3, 4] and [10, 20, 30].
    assert trimmed_mean(V, 0.2).tolist() == [3.0, 20.0]
    # beta 0.1 cuts int(0.5) = 0: the plain mean.
    assert trimmed_mean(V, 0.1).tolist() == pytest.approx([22.0, 19.0])


def test_krum_picks_the_vector_closest_to_its_neighbours() -> None:
    pts = [np.array([x], np.float32) for x in (0.0, 1.0, 2.0, 10.0)]
    # f = 0: n - f - 2 = 2 closest. Squared distances: 0 -> {1, 4}, 1 -> {1, 1},
    # 2 -> {1, 4}, 10 -> {64, 81}.
    assert krum_scores(pts, 0).tolist() == [5.0, 2.0, 5.0, 145.0]
    assert krum_select(pts, 0, 1) == [1]
    assert krum_select(pts, 0, 3) == [1, 0, 2]  # lowest first, ties by index
    got = aggregate(updates(pts), "krum", RobustParams(krum_select=1))
    assert got.tolist() == [1.0]


def test_multikrum_averages_the_selected_by_examples() -> None:
    pts = [np.array([x], np.float32) for x in (0.0, 1.0, 2.0, 10.0)]
    got = aggregate(updates(pts, [1, 1, 2, 1]), "krum", RobustParams(krum_select=2))
    # Selected: 1 (score 2) and 0 (score 5, tie with 2 broken by index), weights 1 and 1.
    assert got.tolist() == [0.5]


def test_robust_kinds_take_unit_coefficients_for_the_filter() -> None:
    ups = updates(V[:2], [5, 7])
    assert coefficients(ups, "weighted") == [5.0, 7.0]
    for kind in ("mean", "median", "trimmed-mean", "krum"):
        assert coefficients(ups, kind) == [1.0, 1.0]
    with pytest.raises(ValueError, match="not one of"):
        coefficients(ups, "geomedian")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("trim_beta", 0.5, "trim-beta"),
        ("krum_malicious", -1, "krum-malicious"),
        ("krum_select", 0, "krum-select"),
    ],
)
def test_bad_knobs_name_their_key(field: str, value: float, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        RobustParams(**{field: value})
    with pytest.raises(ValueError, match=key):
        RunConfig(**{field: value}).validate()


# -- equal to Flower's own functions -----------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [4, 5, 8])
def test_median_equals_flowers(seed: int, n: int) -> None:
    vs = random_inputs(seed, n)
    (flower,) = aggregate_median([([v], 1) for v in vs])
    assert np.array_equal(coordinate_median(vs), flower.astype(np.float32))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("n", "beta"), [(5, 0.2), (8, 0.25), (10, 0.1), (6, 0.0)])
def test_trimmed_mean_equals_flowers(seed: int, n: int, beta: float) -> None:
    vs = random_inputs(seed, n)
    ours = trimmed_mean(vs, beta)
    (legacy,) = aggregate_trimmed_avg([([v], 1) for v in vs], beta)
    np.testing.assert_allclose(ours, legacy, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours, trim_mean(np.stack(vs), beta), rtol=1e-6, atol=1e-6)


def _record(v: np.ndarray, n: int) -> RecordDict:
    return RecordDict(
        {"arrays": ArrayRecord({"w": Array(v)}), "metrics": MetricRecord({"num-examples": n})}
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize(("n", "f"), [(5, 0), (7, 1), (8, 2)])
def test_krum_equals_flowers(seed: int, n: int, f: int) -> None:
    vs = random_inputs(seed, n)
    counts = [int(c) for c in np.random.default_rng(seed).integers(1, 50, size=n)]
    (legacy,) = aggregate_krum([([v], c) for v, c in zip(vs, counts, strict=True)], f, 0)
    krum = aggregate(updates(vs, counts), "krum", RobustParams(krum_malicious=f))
    assert np.array_equal(krum, legacy)
    # MultiKrum (m = 3): the same selection as the new API, the same weighted mean as the old.
    records = [_record(v, c) for v, c in zip(vs, counts, strict=True)]
    chosen = select_multikrum(records, num_malicious_nodes=f, num_nodes_to_select=3)
    assert [records.index(r) for r in chosen] == krum_select(vs, f, 3)
    (multi,) = aggregate_krum([([v], c) for v, c in zip(vs, counts, strict=True)], f, 3)
    ours = aggregate(updates(vs, counts), "krum", RobustParams(krum_malicious=f, krum_select=3))
    np.testing.assert_allclose(ours, multi, rtol=1e-6, atol=1e-6)


# -- in a policy, with the filter on top --------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "expected"),
    [("mean", [22.0, 19.0]), ("median", [3.0, 20.0]), ("trimmed-mean", [3.0, 20.0])],
)
def test_bsp_applies_the_chosen_aggregate(kind: str, expected: list[float]) -> None:
    drv = ScriptedDriver(BSPPolicy(5, GroupParams(fraction=1.0, aggregation=kind), seed=0))
    drv.start([0, 0])
    for cid, v in enumerate(V):
        drv.update(1.0 + cid, cid, v.tolist())
    drv.finish()
    (_, model), *_ = drv.models()
    assert model.weights.tolist() == pytest.approx(expected)
    # The cosine filter scored every collected client against the robust aggregate.
    assert sorted(r["cid"] for r in drv.records("client_score")) == [0, 1, 2, 3, 4]

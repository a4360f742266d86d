"""Partitioners: statistical shape, exactness, determinism, exhaustion, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fl_r2sp.datasets import (
    dirichlet_partition,
    iid_partition,
    make_partition,
    paper_partition,
    speaker_partition,
)
from fl_r2sp.datasets.redistribution import fill_counts
from fl_r2sp.datasets.split import largest_remainder, round_half_up

# 10 classes x 5,000 samples: pools large enough that 200 clients x 100
# samples (20,000) never exhaust a class, so histograms follow the draws.
BIG = np.repeat(np.arange(10), 5000)


def _max_share(hist: np.ndarray) -> np.ndarray:
    return hist.max(axis=1) / hist.sum(axis=1)


def _assert_disjoint(part, n: int) -> None:
    allidx = np.concatenate(part.indices)
    assert len(np.unique(allidx)) == len(allidx), "an index is used twice"
    assert allidx.min() >= 0 and allidx.max() < n


def test_alpha_small_clients_dominated_by_one_class() -> None:
    # Symmetric Dirichlet(0.1) over 10 classes: E[max share] = 0.665 and its
    # std is 0.19, so the mean over 200 clients has standard error 0.013;
    # 0.55 is ~9 standard errors below. Uniform would give 0.1.
    p = paper_partition(BIG, 200, alpha=0.1, outlier_fraction=0.0, samples_per_client=100, seed=3)
    share = _max_share(p.label_histograms(BIG, 10))
    assert p.stats["exhausted_clients"] == 0
    assert share.mean() > 0.55
    assert np.median(share) > 0.5


def test_alpha_large_clients_mixed() -> None:
    # Dirichlet(10): E[max share] = 0.154, std 0.02 -> SE 0.0014 over 200
    # clients; rounding to 100 samples adds < 0.01. Bound 0.2 is far above.
    p = paper_partition(BIG, 200, alpha=10.0, outlier_fraction=0.0, samples_per_client=100, seed=3)
    hist = p.label_histograms(BIG, 10)
    assert _max_share(hist).mean() < 0.2
    assert (hist > 0).sum(axis=1).mean() > 9.5  # nearly every client sees all classes


def test_paper_outliers_are_the_skewed_ones() -> None:
    p = paper_partition(BIG, 200, samples_per_client=100, seed=1)
    share = _max_share(p.label_histograms(BIG, 10))
    out = np.array(sorted(p.outlier_ids))
    regular = np.setdiff1d(np.arange(200), out)
    assert len(out) == 50
    assert share[out].mean() > 0.55 and share[regular].mean() < 0.2


def test_paper_sizes_disjoint_and_proportional_counts() -> None:
    p = paper_partition(BIG, 40, samples_per_client=50, seed=0)
    assert (p.sizes() == 50).all()
    _assert_disjoint(p, len(BIG))
    hist = p.label_histograms(BIG, 10)
    # No exhaustion here, so counts are exactly the largest-remainder rounding.
    for i in range(40):
        np.testing.assert_array_equal(hist[i], largest_remainder(p.proportions[i], 50))


def test_paper_default_size_is_equal_share() -> None:
    labels = np.arange(103) % 10
    p = paper_partition(labels, 10, seed=0)
    assert (p.sizes() == 10).all()  # floor(103 / 10)
    _assert_disjoint(p, 103)


@pytest.mark.parametrize(
    "fraction,n,expected",
    [(0.25, 10, 3), (0.25, 32, 8), (0.25, 2, 1), (0.0, 10, 0), (0.05, 10, 1), (0.04, 10, 0)],
)
def test_outlier_count_rounds_half_up(fraction: float, n: int, expected: int) -> None:
    labels = np.arange(1000) % 10
    assert len(paper_partition(labels, n, outlier_fraction=fraction).outlier_ids) == expected
    assert round_half_up(2.5) == 3 and round_half_up(0.4) == 0


def test_same_seed_same_partition_bit_for_bit() -> None:
    labels = np.arange(2000) % 10
    for method in ("paper", "dirichlet", "iid"):
        a = make_partition(method, labels, None, 16, alpha=0.5, seed=7)
        b = make_partition(method, labels, None, 16, alpha=0.5, seed=7)
        c = make_partition(method, labels, None, 16, alpha=0.5, seed=8)
        assert all(np.array_equal(x, y) for x, y in zip(a.indices, b.indices, strict=True))
        assert a.outlier_ids == b.outlier_ids
        assert any(not np.array_equal(x, y) for x, y in zip(a.indices, c.indices, strict=True))


def test_fill_redistributes_shortfall_by_client_proportions() -> None:
    # Wants 6/3/1 of class 0/1/2 but class 0 has only 2 left: the 4 missing
    # go to classes 1 and 2 in ratio 0.3 : 0.1 -> 3 and 1.
    counts, moved = fill_counts(np.array([0.6, 0.3, 0.1]), 10, np.array([2, 100, 100]))
    np.testing.assert_array_equal(counts, [2, 6, 2])
    assert moved == 4
    assert fill_counts(np.array([0.6, 0.3, 0.1]), 10, np.array([9, 9, 9]))[1] == 0
    # Own classes all empty: follow what is left (only class 2).
    np.testing.assert_array_equal(
        fill_counts(np.array([1.0, 0.0, 0.0]), 4, np.array([0, 0, 9]))[0], [0, 0, 4]
    )
    # Capped twice: class 1 also runs out during redistribution.
    np.testing.assert_array_equal(
        fill_counts(np.array([0.5, 0.4, 0.1]), 10, np.array([1, 2, 50]))[0], [1, 2, 7]
    )


def test_paper_pool_exhaustion_still_fills_every_client() -> None:
    # Class 0 is rare: outliers asking for it exhaust it and get redistributed.
    labels = np.concatenate([np.zeros(30, int), np.repeat(np.arange(1, 5), 300)])
    p = paper_partition(labels, 20, alpha=0.1, outlier_fraction=0.5, seed=2)
    assert (p.sizes() == len(labels) // 20).all()
    _assert_disjoint(p, len(labels))
    assert p.stats["exhausted_clients"] > 0 and p.stats["redistributed_samples"] > 0
    assert p.label_histograms(labels, 5)[:, 0].sum() <= 30


def test_dirichlet_partition_uses_every_row_and_skews() -> None:
    small = dirichlet_partition(BIG, 50, alpha=0.1, seed=0)
    large = dirichlet_partition(BIG, 50, alpha=1000.0, seed=0)
    for p in (small, large):
        assert sum(p.sizes()) == len(BIG) and p.sizes().min() >= 10
        _assert_disjoint(p, len(BIG))
    assert _max_share(small.label_histograms(BIG, 10)).mean() > 0.4
    assert _max_share(large.label_histograms(BIG, 10)).mean() < 0.15


def test_dirichlet_impossible_min_size_raises() -> None:
    with pytest.raises(ValueError, match="min_size"):
        dirichlet_partition(np.arange(40) % 2, 10, alpha=0.01, seed=0, min_size=4, max_attempts=5)


def test_iid_partition_sizes() -> None:
    p = iid_partition(103, 10, seed=0)
    assert sorted(p.sizes()) == [10] * 7 + [11] * 3
    _assert_disjoint(p, 103)
    assert (iid_partition(103, 10, seed=0, samples_per_client=5).sizes() == 5).all()


def test_speaker_partition_keeps_speakers_whole_and_balanced() -> None:
    groups = np.repeat(np.array([f"s{i:02d}" for i in range(30)]), np.arange(1, 31))
    p = speaker_partition(groups, 5, seed=0)
    _assert_disjoint(p, len(groups))
    assert sum(p.sizes()) == len(groups)
    owners = [set(groups[ix]) for ix in p.indices]
    assert sum(len(o) for o in owners) == 30  # each speaker on exactly one client
    assert p.sizes().max() - p.sizes().min() <= 30  # greedy LPT bound: largest speaker
    with pytest.raises(ValueError, match="fewer clients"):
        speaker_partition(groups, 31, seed=0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(method="nope"), "unknown partitioner"),
        (dict(alpha=0.0), "alpha must be a positive"),
        (dict(alpha=-1.0), "alpha must be a positive"),
        (dict(outlier_alpha=0.0), "outlier_alpha"),
        (dict(outlier_fraction=1.0), r"\[0, 1\)"),
        (dict(outlier_fraction=-0.1), r"\[0, 1\)"),
        (dict(num_clients=101), "only 100 samples"),
        (dict(num_clients=0), ">= 1"),
        (dict(samples_per_client=11), "exceeds"),
        (dict(samples_per_client=-1), ">= 0"),
        (dict(method="speaker"), "speaker ids"),
    ],
)
def test_make_partition_errors(kwargs: dict, match: str) -> None:
    args = dict(method="paper", labels=np.arange(100) % 10, groups=None, num_clients=10)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        make_partition(**args)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(20, 400),
    k=st.integers(1, 12),
    clients=st.integers(1, 20),
    alpha=st.sampled_from([0.05, 0.1, 1.0, 10.0]),
    fraction=st.sampled_from([0.0, 0.25, 0.5, 0.9]),
    seed=st.integers(0, 2**32 - 1),
)
def test_paper_invariants_hold_for_any_input(n, k, clients, alpha, fraction, seed) -> None:
    # Skewed label counts (class c has weight c + 1) make pools run out often.
    weights = np.arange(1, k + 1) / (k * (k + 1) / 2)
    labels = np.random.default_rng(seed).choice(k, size=n, p=weights)
    clients = min(clients, n)
    p = paper_partition(labels, clients, alpha=alpha, outlier_fraction=fraction, seed=seed)
    assert (p.sizes() == n // clients).all()
    _assert_disjoint(p, n)
    assert len(p.outlier_ids) == round_half_up(fraction * clients)
    assert all(0 <= o < clients for o in p.outlier_ids)
    assert p.stats["redistributed_samples"] >= p.stats["exhausted_clients"]

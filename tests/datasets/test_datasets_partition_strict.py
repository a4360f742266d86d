"""Partitioner ``paper-strict``: the paper's stated class shares hold in the realised data."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.datasets import make_partition, paper_partition
from fl_r2sp.datasets.paper_strict import (
    conditioned_proportions,
    meets_property,
    reserves,
    strict_counts,
)

# CIFAR-10's train split in shape: 10 classes x 5,000; 128 clients x 390 use 49,920 rows.
CIFAR_LIKE = np.repeat(np.arange(10), 5000)


def test_realised_shares_meet_the_paper_on_the_full_split() -> None:
    p = make_partition("paper-strict", CIFAR_LIKE, None, 128, seed=0)
    shares = p.class_shares(CIFAR_LIKE, 10)
    out = np.array(sorted(p.outlier_ids))
    regular = np.setdiff1d(np.arange(128), out)
    assert len(out) == 32 and p.method == "paper-strict"
    assert (shares[out, 0] > 0.97).all()  # 379 / 390 = 0.9718 at least
    assert (shares[regular, 1] >= 0.07).all()  # 28 / 390 = 0.0718 at least
    assert (p.sizes() == 390).all()
    allidx = np.concatenate(p.indices)
    assert len(np.unique(allidx)) == len(allidx) == 128 * 390


def test_plain_paper_partition_misses_the_properties() -> None:
    # The contrast that motivates the strict mode (same labels, same seed).
    p = make_partition("paper", CIFAR_LIKE, None, 128, seed=0)
    shares = p.class_shares(CIFAR_LIKE, 10)
    out = np.array(sorted(p.outlier_ids))
    regular = np.setdiff1d(np.arange(128), out)
    assert (shares[out, 0] <= 0.97).any() and (shares[regular, 1] < 0.07).any()


def test_deterministic_and_drawn_proportions_have_the_property() -> None:
    a = paper_partition(CIFAR_LIKE, 64, samples_per_client=200, seed=5, strict=True)
    b = paper_partition(CIFAR_LIKE, 64, samples_per_client=200, seed=5, strict=True)
    assert all(np.array_equal(x, y) for x, y in zip(a.indices, b.indices, strict=True))
    assert a.proportions is not None
    for i, p in enumerate(a.proportions):
        assert meets_property(p, i in a.outlier_ids)


def test_meets_property_boundaries() -> None:
    assert meets_property(np.array([0.971, 0.029]), outlier=True)
    assert not meets_property(np.array([0.97, 0.03]), outlier=True)  # "over 97%": strict
    assert meets_property(np.full(10, 0.1), outlier=False)
    assert not meets_property(np.array([0.069] + [0.931 / 9] * 9), outlier=False)


def test_reserves_are_exact_rational_bounds() -> None:
    props = np.array([[0.98, 0.02], [0.5, 0.5]])
    r = reserves(props, np.array([True, False]), 100)
    # Outlier: floor(97) + 1 = 98 of class 0; regular: ceil(7) = 7 (not 8 from 7.000000000000001).
    assert r.tolist() == [[98, 0], [7, 7]]


def test_strict_counts_hand_example_with_a_class_running_out() -> None:
    # Client 0 outlier wants (195, 5) of 200; client 1 regular wants (100, 100).
    # Reserves: 195 of class 0 (floor(194) + 1) and 14 + 14; class 0 has 250, so
    # after all reserves 41 remain: client 0 takes its 5 of class 1, client 1
    # gets the 41 left of class 0 and the other 131 from class 1 (45 moved).
    props = np.array([[0.975, 0.025], [0.5, 0.5]])
    counts, moved = strict_counts(props, np.array([True, False]), 200, np.array([250, 1000]))
    assert counts.tolist() == [[195, 5], [55, 145]]
    assert moved == 45


def test_strict_counts_none_when_reserves_do_not_fit() -> None:
    # Two outliers on class 0 need 98 each of a pool of 150.
    props = np.array([[0.99, 0.01], [0.99, 0.01]])
    assert strict_counts(props, np.array([True, True]), 100, np.array([150, 500])) is None


def test_impossible_regular_property_is_a_clear_error() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="15 classes"):
        conditioned_proportions(np.full(3, 10.0), np.zeros(3, bool), 15, rng)


def test_bounded_redraws_error_names_the_client() -> None:
    # Dirichlet(0.05) over 10 classes almost never has every share >= 0.07;
    # with a single draw allowed the first regular client fails.
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="no Dirichlet\\(0.05\\) draw in 1 .*client 0"):
        conditioned_proportions(np.full(2, 0.05), np.zeros(2, bool), 10, rng, max_redraws=1)


def test_pool_too_small_for_reserves_is_a_clear_error() -> None:
    # Class 1 has 10 rows; 4 regular clients of 100 each need 7 of it each (28).
    labels = np.concatenate([np.zeros(990, np.int64), np.ones(10, np.int64)])
    with pytest.raises(ValueError, match="never had room"):
        make_partition(
            "paper-strict", labels, None, 4, outlier_fraction=0.0, samples_per_client=100, seed=0
        )

"""Max-min solver: hand-computed allocations and 10,000 random scenarios vs the reference."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.emulation.maxmin import maxmin_rates, maxmin_rates_reference

#: Relative tolerance on rates (both solvers do the same few float operations).
RATE_RTOL = 1e-9


def test_three_caps_below_fair_share_redistribute() -> None:
    # Shared link 9 over three flows; client caps 1, 2, 100. Fair share 3 -> the
    # flow capped at 1 frees 2, share (9-1)/2 = 4 -> capped at 2 frees 2 more -> 6.
    rates = maxmin_rates([[0, 1], [0, 2], [0, 3]], np.array([9.0, 1.0, 2.0, 100.0]))
    assert rates == pytest.approx([1.0, 2.0, 6.0], rel=RATE_RTOL)


def test_equal_flows_split_evenly_and_unshared_links_are_independent() -> None:
    rates = maxmin_rates([[0], [0], [0], [1]], np.array([3.0, 5.0]))
    assert rates == pytest.approx([1.0, 1.0, 1.0, 5.0], rel=RATE_RTOL)


def test_multi_link_chain_parking_lot() -> None:
    # Classic parking lot: a long flow over links 0 and 1 (cap 1 each) and one
    # short flow on each link: everyone gets 1/2.
    rates = maxmin_rates([[0, 1], [0], [1]], np.array([1.0, 1.0]))
    assert rates == pytest.approx([0.5, 0.5, 0.5], rel=RATE_RTOL)


def test_infinite_capacity_link_is_never_a_bottleneck() -> None:
    rates = maxmin_rates([[0, 1], [1]], np.array([np.inf, 4.0]))
    assert rates == pytest.approx([2.0, 2.0], rel=RATE_RTOL)


@pytest.mark.parametrize(
    ("flows", "caps", "match"),
    [
        ([[0]], np.array([0.0]), "positive"),
        ([[0]], np.array([-1.0]), "positive"),
        ([[0]], np.array([np.nan]), "positive"),
        ([[]], np.array([1.0]), "no link"),
        ([[3]], np.array([1.0]), "only links"),
        ([[0, 0]], np.array([1.0]), "twice"),
    ],
)
def test_bad_inputs_raise(flows: list[list[int]], caps: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        maxmin_rates(flows, caps)


def _random_scenario(rng: np.random.Generator) -> tuple[list[list[int]], np.ndarray]:
    n_links = int(rng.integers(1, 6))
    n_flows = int(rng.integers(1, 9))
    # Integer capacities half of the time, so that exact ties between links occur.
    if rng.random() < 0.5:
        caps = rng.integers(1, 6, n_links).astype(float)
    else:
        caps = rng.uniform(0.1, 10.0, n_links)
    flows = []
    for _ in range(n_flows):
        k = int(rng.integers(1, n_links + 1))
        flows.append(sorted(rng.choice(n_links, size=k, replace=False).tolist()))
    return flows, caps


def _assert_maxmin_property(flows: list[list[int]], caps: np.ndarray, rates: np.ndarray) -> None:
    load = np.zeros_like(caps)
    for f, links in enumerate(flows):
        load[links] += rates[f]
    assert (load <= caps * (1 + RATE_RTOL)).all()
    # Every flow has a bottleneck: a saturated link on which no flow is faster.
    for f, links in enumerate(flows):
        assert any(
            load[link] >= caps[link] * (1 - RATE_RTOL)
            and all(
                rates[g] <= rates[f] * (1 + RATE_RTOL) for g, ls in enumerate(flows) if link in ls
            )
            for link in links
        ), (flows, caps, rates)


def test_random_scenarios_match_reference_solver() -> None:
    rng = np.random.default_rng(20240601)
    for _ in range(10_000):
        flows, caps = _random_scenario(rng)
        fast = maxmin_rates(flows, caps)
        slow = maxmin_rates_reference(flows, caps.tolist())
        np.testing.assert_allclose(fast, slow, rtol=RATE_RTOL)
        _assert_maxmin_property(flows, caps, fast)


def test_star_with_many_distinct_client_caps_matches_closed_form() -> None:
    # One shared link C, private caps c_i: rate_i = min(c_i, lam) with
    # sum_i min(c_i, lam) = C; lam found by bisection here.
    rng = np.random.default_rng(3)
    caps = rng.uniform(5e4, 2e5, 300)
    shared = 8.3e6
    lo, hi = 0.0, shared
    for _ in range(200):
        lam = (lo + hi) / 2
        lo, hi = (lam, hi) if np.minimum(caps, lam).sum() < shared else (lo, lam)
    rates = maxmin_rates([[0, 1 + i] for i in range(300)], np.concatenate(([shared], caps)))
    np.testing.assert_allclose(rates, np.minimum(caps, lo), rtol=1e-9)

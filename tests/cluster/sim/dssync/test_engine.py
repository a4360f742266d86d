"""DS-Sync flow twin: ring, hierarchical and gossip times by hand; regrouping on contention."""

from __future__ import annotations

import pytest

from fl_r2sp.cluster.policies.dssync.patterns import adjust_groups, init_groups
from fl_r2sp.cluster.sim.dssync.engine import (
    RackNet,
    dssync_time,
    gossip_time,
    hierarchical_time,
    pattern_time,
    step_time,
)

S = 3e9  # bytes; NICs of 20 Gb/s move 2.5e9 B/s, so S/b = 1.2 s
A = 1e-4
FOUR = ((0, 1, 2, 3), (4, 5, 6, 7))


def test_static_4_plus_4_by_hand():
    rn = RackNet(FOUR, (5, 5), alpha_s=A)
    # AR of 8: 14 steps of S/8 = 0.15 s each, plus latency
    assert step_time(rn, [tuple(range(8))], S)[0] == pytest.approx(14 * (A + 0.15))
    # DS-Sync static pattern: groups of 3 (4 steps of S/3 = 0.4 s) beat the pair (2 x 0.6 s)
    t, records = pattern_time(rn, init_groups([list(r) for r in FOUR]), S)
    assert t == pytest.approx(4 * (A + 0.4))
    assert len(records) == 12
    # hierarchical: reduce-scatter 3 x 0.3, leaders' pair 2 x 0.6, all-gather 3 x 0.3
    assert hierarchical_time(rn, S) == pytest.approx(6 * (A + 0.3) + 2 * (A + 0.6))
    # gossip: every worker sends S at once over its own NIC; uplinks have room
    assert gossip_time(rn, S) == pytest.approx(A + 1.2)


def test_one_path_uplink_halves_crossing_flows():
    rn = RackNet(FOUR, (5, 5), uplink_gbps=20.0, background=((0, -1), (1, -1)), alpha_s=A)
    # the AR ring's two crossings share their uplink with a background flow: 10 Gb/s each
    assert step_time(rn, [tuple(range(8))], S)[0] == pytest.approx(14 * (A + 0.3))


def test_delayed_nic_found_and_isolated():
    rn = RackNet(((0, 1, 2, 3, 4), (5, 6, 7)), (5, 5), background=((0, 4), (1, -1)), alpha_s=A)
    out = dssync_time(rn, S)
    assert out.found.delayed == (4,) and out.found.slow_racks == ()
    assert out.pattern == adjust_groups([[0, 1, 2, 3, 4], [5, 6, 7]], (), (4,))
    # worker 4 in a pair at half its NIC: 2 steps of (S/2)/(1.25e9 B/s) = 1.2 s
    assert out.adjusted_s == pytest.approx(2 * (A + 1.2))
    assert out.adjusted_s < out.init_s


def test_racknet_rejects_bad_input():
    with pytest.raises(ValueError, match="fewer hosts"):
        RackNet(FOUR, (3, 5))
    with pytest.raises(ValueError, match="background"):
        RackNet(FOUR, (5, 5), background=((0, -1),))

"""DS-Sync patterns: initGroups, adjustGroups, validators, regrouping, baselines."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.cluster.policies.dssync.baselines import (
    allreduce_pattern,
    gossip_edges,
    gossip_matrix,
    gossip_period,
    hierarchical_schedule,
)
from fl_r2sp.cluster.policies.dssync.check import (
    mixing_matrix,
    pattern_rho,
    period_product,
    second_eigenvalue_modulus,
    union_connected,
    uplink_violations,
    validate_pattern,
)
from fl_r2sp.cluster.policies.dssync.patterns import Pattern, adjust_groups, init_groups
from fl_r2sp.cluster.policies.dssync.regroup import (
    Bottlenecks,
    DSSyncParams,
    detect_bottlenecks,
    regroup,
)

RACKS_44 = [[0, 1, 2, 3], [4, 5, 6, 7]]
RACKS_53 = [[0, 1, 2, 3, 4], [5, 6, 7]]


def test_init_groups_paper_example_8_workers_4_plus_4():
    p = init_groups(RACKS_44)
    assert p.period == 4
    assert p.steps == (
        ((0, 4), (1, 2, 3), (5, 6, 7)),
        ((0, 2, 3), (1, 5), (4, 6, 7)),
        ((0, 1, 3), (2, 6), (4, 5, 7)),
        ((0, 1, 2), (3, 7), (4, 5, 6)),
    )
    for step in p.steps:  # one inter-rack group and two intra-rack groups per step
        assert sorted(len(g) for g in step) == [2, 3, 3]
    validate_pattern(p, RACKS_44)
    assert p.group(5, 5) == (1, 5)  # groups[5 % 4][5]
    assert p.rank_map(0)[6] == (5, 6, 7)


def test_adjust_groups_slow_uplink_rotating_regular_partner():
    racks = [[0, 1], [2, 3], [4, 5]]  # rack 0's uplink is contended
    p = adjust_groups(racks, slow_racks=[0])
    # representatives cycle every 2 steps; the regular partner advances once per cycle
    assert p.period == 4
    # t=0: reps 0, 2, 4; slow rack 0 pairs with regular rack 1; rack 2's rep is alone -> home
    assert p.steps[0] == ((0, 2), (1,), (3,), (4, 5))
    assert p.steps[1] == ((0,), (1, 3), (2,), (4, 5))
    # t=2: the partner is rack 2 now; rack 1 stays home
    assert p.steps[2] == ((0, 4), (1,), (2, 3), (5,))
    assert p.steps[3] == ((0,), (1, 5), (2, 3), (4,))
    validate_pattern(p, racks)


def test_lockstep_rotation_would_disconnect():
    # what the pattern would be if partner and representative rotated together: 0 only ever
    # meets rack 1 and 1 only rack 2, so {0, 2, 3} and {1, 4, 5} never mix
    lockstep = Pattern((((0, 2), (1,), (3,), (4, 5)), ((0,), (1, 5), (2, 3), (4,))), 6)
    assert not union_connected(lockstep.steps, 6)


def test_adjust_groups_delayed_worker_small_group_and_hub():
    p = adjust_groups(RACKS_53, delayed=[4])
    assert p.period == 12  # rack 0 rotates over 4 regular workers, rack 1 over 3
    # t=0: rep 0, delayed 4 with partner 1, hub {2, 3}; rack 1 rep 5
    assert p.steps[0] == ((0, 5), (1, 4), (2, 3), (6, 7))
    # t=1: rep 1, partner 2, hub {0, 3}
    assert p.steps[1] == ((0, 3), (1, 6), (2, 4), (5, 7))
    assert all(4 not in g or len(g) == 2 for s in p.steps for g in s)
    assert all(not ({4} < set(g) and any(r >= 5 for r in g)) for s in p.steps for g in s)
    validate_pattern(p, RACKS_53)


def test_adjust_groups_too_small_rack_falls_back_to_turns():
    p = adjust_groups([[0, 1], [2, 3]], delayed=[1])
    assert p == init_groups([[0, 1], [2, 3]])
    # two-member racks: the lockstep period pairs (0, 2) and (1, 3) only; the shifted second
    # period pairs (0, 3) and (1, 2), which connects everyone
    assert p.steps == (
        ((0, 2), (1,), (3,)),
        ((0,), (1, 3), (2,)),
        ((0, 3), (1,), (2,)),
        ((0,), (1, 2), (3,)),
    )
    validate_pattern(p, [[0, 1], [2, 3]])


def test_adjust_groups_more_slow_than_regular_racks():
    racks = [[0], [1], [2], [3]]
    p = adjust_groups(racks, slow_racks=[0, 1, 2])
    validate_pattern(p, racks)
    # every step: one slow rep with the regular rack 3, the other two slow reps paired
    for step in p.steps:
        assert sorted(len(g) for g in step) == [2, 2]


def test_one_group_is_allreduce_averaging():
    n = 6
    w = mixing_matrix(allreduce_pattern(n).steps[0], n)
    x = np.arange(n * 3, dtype=float).reshape(n, 3)
    np.testing.assert_allclose(w @ x, np.tile(x.mean(axis=0), (n, 1)))
    assert init_groups([list(range(n))]) == allreduce_pattern(n)
    assert pattern_rho(allreduce_pattern(n)) == pytest.approx(0.0, abs=1e-12)


def test_disconnected_pattern_fails_every_check():
    p = Pattern((((0, 1), (2, 3)), ((0, 1), (2, 3))), 4)
    assert not union_connected(p.steps, 4)
    assert pattern_rho(p) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="does not connect"):
        validate_pattern(p)


def test_rho_matches_hand_value_for_two_step_pattern():
    # {0,1},{2} then {0},{1,2} -> product rows (.5,.5,0), (.25,.25,.5), (.25,.25,.5)
    p = Pattern((((0, 1), (2,)), ((0,), (1, 2))), 3)
    prod = period_product([mixing_matrix(s, 3) for s in p.steps])
    np.testing.assert_allclose(prod, [[0.5, 0.5, 0], [0.25, 0.25, 0.5], [0.25, 0.25, 0.5]])
    # trace 1.25 and two equal rows (det 0): eigenvalues 1, 0.25, 0 -> rho = 0.25
    assert second_eigenvalue_modulus(prod) == pytest.approx(0.25)
    assert pattern_rho(p) == pytest.approx(0.25)


def test_validators_reject_non_partition_and_uplink_crowding():
    with pytest.raises(ValueError, match="partition"):
        validate_pattern(Pattern((((0, 1), (1, 2)),), 3))
    crowded = Pattern((((0, 1, 4), (2, 3), (5, 6, 7)), ((0, 4, 5, 6, 7), (1, 2, 3))), 8)
    assert uplink_violations(crowded.steps[0], RACKS_44) == [(0, 1, 4)]
    with pytest.raises(ValueError, match="uplink"):
        validate_pattern(crowded, RACKS_44)
    validate_pattern(allreduce_pattern(8), RACKS_44, one_per_uplink=False)


def test_detect_bottlenecks_delayed_nic_and_slow_uplink():
    # records from init_groups on 4+4 with rank 2's NIC at half rate: every group with 2 is 2x
    p = init_groups(RACKS_44)
    recs = []
    for step in p.steps:
        for g in step:
            base = 2 * (len(g) - 1) / len(g)  # ring factor: normalised time 1.0
            recs.append((g, base * (2.0 if 2 in g else 1.0)))
    assert detect_bottlenecks(recs, RACKS_44) == Bottlenecks((), (2,))
    # four racks of 3 under a pattern with several inter-rack groups; rack 1's uplink is at
    # half rate: every group crossing racks with a member of rack 1 takes 2x
    racks = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    q = adjust_groups(racks, slow_racks=[0])
    recs = []
    for step in q.steps:
        for g in step:
            spans = len({r // 3 for r in g}) > 1
            slow = spans and any(r in (3, 4, 5) for r in g)
            recs.append((g, 2 * (len(g) - 1) / max(len(g), 1) * (2.0 if slow else 1.0)))
    assert detect_bottlenecks(recs, racks) == Bottlenecks((1,), ())
    # two racks: every crossing is the same group, so a slow uplink cannot be told apart from
    # the other; both are flagged and the adjusted pattern is the static one (nothing to gain)
    recs = [(g, 4.0 if len({r // 4 for r in g}) > 1 else 1.0) for s in p.steps for g in s]
    found = detect_bottlenecks(recs, RACKS_44)
    assert found == Bottlenecks((0, 1), ())
    assert adjust_groups(RACKS_44, found.slow_racks) == init_groups(RACKS_44)


def test_regroup_keeps_pattern_when_nothing_changed():
    p = init_groups(RACKS_44)
    recs = [(g, 1.0) for s in p.steps for g in s]
    found, new = regroup(recs, RACKS_44, Bottlenecks(), DSSyncParams())
    assert found == Bottlenecks() and new is None
    slow = [(g, 3.0 if 5 in g else 1.0) for g, _ in recs]
    found, new = regroup(slow, RACKS_44, Bottlenecks(), DSSyncParams())
    assert found.delayed == (5,) and new == adjust_groups(RACKS_44, (), (5,))


@pytest.mark.parametrize(
    "kw", [{"period": 0}, {"slowness_threshold": 1.0}, {"ema_factor": 1.0}, {"period": True}]
)
def test_params_validate(kw):
    with pytest.raises(ValueError):
        DSSyncParams(**kw).validate()


def test_bad_rack_maps_raise():
    with pytest.raises(ValueError, match="exactly once"):
        init_groups([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="slow_racks"):
        adjust_groups(RACKS_44, slow_racks=[2])


def test_hierarchical_and_gossip_baselines():
    h = hierarchical_schedule(RACKS_44)
    assert h.leaders == (0, 4)
    assert [k for k, _ in h.phases()] == ["reduce_scatter", "allreduce", "allgather"]
    assert gossip_period(8) == 3
    assert gossip_edges(8, 2)[:2] == ((0, 4), (1, 5))
    assert gossip_edges(8, 4)[0] == (0, 2)  # t mod 3 = 1 -> shift 2
    w = gossip_matrix(8, 0)
    np.testing.assert_allclose(w.sum(axis=0), 1.0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    prod = period_product([gossip_matrix(8, t) for t in range(3)])
    np.testing.assert_allclose(prod, np.full((8, 8), 1 / 8))  # exact average after log2 N

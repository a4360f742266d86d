"""A rejected update answers its round: FL-R²SP's threshold counts it, its mean excludes it.

Scenario Q (hand-computed): 8 clients, M = 2 (G0 = {0, 2, 4, 6}, G1 = {1, 3, 5, 7}),
C = 0.75 (need ceil(0.75 * 4) = 3), gap factor 0, filter off, w0 = [0, 0]; clients 2
and 4 (both in G0) are always rejected by admission, ``max_rejections = 3``.

  t=1.0, 1.1  2 and 4 rejected: excluded (answered, not aggregated).
  t=1.2       c0 -> w0 + [4, 0]: G0 has 3 answers = need: applies at once,
              w1 = 0.5*[0,0] + 0.5*[4,0] = [2, 0] (the mean of c0 alone).
  t=1.3       c6 (tag 0) is a straggler: re-sent G0's newest model [2, 0], tag 1.
  t=2.0       c1, c3, c5 -> w0 + [0, 2]: w2 = 0.5*[2,0] + 0.5*[0,2] = [1, 1].
  t=3.0-3.2   2, 4 rejected again, c0 -> [2,0] + [2,0] = [4, 0]:
              w3 = 0.5*[1,1] + 0.5*[4,0] = [2.5, 0.5].
  ...         every G0 turn applies (versions 1, 3, 5, 7); in round 3 the 4th
              rejection in a row drops 2 and 4, need falls to ceil(0.75*2) = 2 and
              G0 collects c0 and c6.

Under the earlier reading (a rejection is a failed job) G0 could not collect 3 updates
until both attackers had been dropped after 4 round trips each, and the fixed order
held G1 too: 0 global updates in 240 s in a loaded chaos run.
"""

from __future__ import annotations

import numpy as np

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.base import Send
from fl_r2sp.fl.policies.bsp import BSPPolicy
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.policies.scripted import ScriptedDriver
from fl_r2sp.fl.server.runner import run

OFF = OutlierParams(enabled=False)


def scenario_q() -> ScriptedDriver:
    group = GroupParams(num_groups=2, fraction=0.75, gap_factor=0.0)
    drv = ScriptedDriver(FLR2SPPolicy(8, group, OFF, max_rejections=3))
    drv.start([0, 0])
    for r in range(4):
        t = 1.0 + 2 * r
        drv.reject(t, 2)
        drv.reject(t + 0.1, 4)
        drv.update(t + 0.2, 0, delta=[4.0 / (r + 1), 0.0])
        drv.update(t + 0.3, 6, delta=[0.0, 4.0])
        for cid in (1, 3, 5):
            drv.update(t + 1.0, cid, delta=[0.0, 2.0 if r == 0 else 0.0])
    return drv


def test_two_always_rejected_members_of_four_do_not_hold_the_group() -> None:
    drv = scenario_q()
    applied = [(t, m.version) for t, m in drv.models()]
    assert applied == [
        (1.2, 1),
        (2.0, 2),
        (3.2, 3),
        (4.0, 4),
        (5.2, 5),
        (6.0, 6),
        (7.3, 7),
        (8.0, 8),
    ]
    weights = [m.weights.tolist() for _, m in drv.models()[:3]]
    assert weights == [[2.0, 0.0], [1.0, 1.0], [2.5, 0.5]]
    assert [r["group"] for r in drv.records("group_apply")] == [0, 1] * 4
    assert not drv.records("group_pass")


def test_rejections_count_toward_the_threshold_until_the_streak_drops_the_member() -> None:
    drv = scenario_q()
    g0 = [r for r in drv.records("group_collect") if r["group"] == 0]
    assert [(r["collected"], r["excluded"], r["need"]) for r in g0] == [
        ([0], [2, 4], 3),
        ([0], [2, 4], 3),
        ([0], [2, 4], 3),
        ([0, 6], [], 2),  # 2 and 4 dropped at their 4th rejection: need 2 of 2
    ]
    rows = [(r["cid"], r["consecutive"], r["action"]) for r in drv.records("client_rejected")]
    assert rows[::2] == [(2, 1, "excluded"), (2, 2, "excluded"), (2, 3, "excluded")] + [
        (2, 4, "dropped")
    ]
    policy = drv.policy
    assert isinstance(policy, FLR2SPPolicy)
    assert policy.failures.dropped == {2, 4} and policy.summary()["num_rejected"] == 8
    # An excluded member gets the group's next model with the collected ones.
    sends = [s for _, s in drv.sends_to(2)]
    assert [s.tag for s in sends] == [0, 1, 2, 3]
    assert sends[1].weights.tolist() == [2.0, 0.0]


def test_a_group_whose_every_answer_was_rejected_passes_its_turn_unchanged() -> None:
    # 4 clients, M = 2, C = 1 (need 2 of 2), w0 = [0, 0].
    drv = ScriptedDriver(FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=1.0), OFF))
    drv.start([0, 0])
    drv.reject(1.0, 0)
    out = drv.reject(2.0, 2)  # G0: 2 answers, none accepted: the turn passes, no model change
    assert drv.records("group_pass") == [
        {"t": 2.0, "group": 0, "round": 0, "version": 0, "excluded": [0, 2]}
    ]
    (send,) = [d for d in out if isinstance(d, Send)]
    assert send.cids == (0, 2) and send.tag == 1 and send.weights.tolist() == [0.0, 0.0]
    assert not drv.models()
    drv.update(3.0, 1, delta=[2.0, 2.0])
    drv.reject(4.0, 3)  # G1: c1 collected, c3 excluded: the mean is c1's alone
    ((t, model),) = drv.models()
    assert (t, model.version, model.weights.tolist()) == (4.0, 1, [1.0, 1.0])
    rejected = drv.records("client_rejected")
    assert [(r["cid"], r["action"], r["reason"]) for r in rejected] == [
        (0, "excluded", "norm"),
        (2, "excluded", "norm"),
        (3, "excluded", "norm"),
    ]


def test_a_late_rejected_update_is_held_or_resent_like_a_straggler() -> None:
    drv = ScriptedDriver(FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=0.5), OFF))
    drv.start([0, 0])
    drv.update(1.0, 1, delta=[1.0, 0.0])  # G1 collected (need 1), waits for G0's turn
    drv.reject(1.5, 3)  # G1 is ready: c3 is held, released with G1's next model
    drv.update(2.0, 0, delta=[2.0, 0.0])  # G0 applies, then G1 (gap: T=2, r*T/M = 1)
    drv.finish()
    assert [r["action"] for r in drv.records("client_rejected")] == ["held"]
    assert [(s.tag, s.cids) for _, s in drv.sends_to(3)] == [(0, (1, 3)), (1, (1, 3))]


def test_bsp_counts_rejections_toward_its_round_too() -> None:
    # BSP, 4 clients, C = 0.75: need 3; c0 and c1 accepted, c2 rejected -> round 0 applies.
    drv = ScriptedDriver(BSPPolicy(4, GroupParams(fraction=0.75), OFF, seed=0))
    drv.start([0, 0])
    drv.update(1.0, 0, delta=[2.0, 0.0])
    drv.reject(1.5, 2)
    drv.update(2.0, 1, delta=[0.0, 2.0])
    ((t, model),) = drv.models()
    assert (t, model.weights.tolist()) == (2.0, [1.0, 1.0])


# -- the loops hand rejections to on_rejected ---------------------------------------------
BASE = dict(
    num_partitions=8,
    num_groups=2,
    fraction=0.75,
    local_iterations=5,
    max_updates=16,
    eval_every=16,
    plots=False,
    partitioner="dirichlet",
    seed=1,
    attack="huge(1e30)@2+scale(1000)@4",
)


def test_virtual_run_two_attackers_in_one_group_of_four_every_turn_applies() -> None:
    out = run(RunConfig(**BASE), write=False, progress=False)
    s, ev = out.summary, out.events
    assert s["status"] == "completed" and s["global_updates"] == 16
    assert s["updates_rejected"] == {"norm": 8} and s["policy_dropped"] == [2, 4]
    assert [r["group"] for r in ev.of_kind("group_apply")] == [0, 1] * 8
    assert not ev.of_kind("group_pass")
    rejected = ev.of_kind("client_rejected")
    assert len(rejected) == 8 and {r["cid"] for r in rejected} == {2, 4}
    assert any(r["excluded"] for r in ev.of_kind("group_collect") if r["group"] == 0)
    assert np.all(np.isfinite(out.weights))


def test_wall_clock_run_hands_rejections_to_the_policy_as_answers() -> None:
    cfg = RunConfig(
        **{**BASE, "max_updates": 4, "local_iterations": 2, "attack": "huge(1e30)@2"},
        clock="wall",
        delay="constant(value=0.01)",
    )
    out = run(cfg, write=False, progress=False)
    assert out.summary["status"] == "completed"
    rejected = out.events.of_kind("client_rejected")
    assert rejected and {r["cid"] for r in rejected} == {2}
    assert out.summary["updates_rejected"]["norm"] == len(rejected)

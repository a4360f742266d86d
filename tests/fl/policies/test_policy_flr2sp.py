"""FL-R²SP policy on scripted scenarios with hand-computed decisions.

Scenario A: 4 clients, M = 2 (G0 = {0, 2}, G1 = {1, 3}), C = 0.5 (need 1 of
2), r = 1, EMA weight 0.1, initial T = 0, w0 = [0, 0].

  t=1   c1 -> [4, 0]: G1 collects (round time 1) but G0 has the turn.
  t=2   c0 -> [2, 2]: G0 collects (round time 2), applies at once:
        w = 0.5*[0,0] + 0.5*[2,2] = [1, 1]; T = 2 (first measurement).
        G1 may apply at 2 + 1*2/2 = 3: Timer(3).
  t=2.5 c2 (tag 0) straggler: replied at once with G0's newest model [1, 1].
  t=2.8 c3 (tag 0) straggler while G1 waits for its turn: held.
  t=3   timer: G1 applies: w = 0.5*[1,1] + 0.5*[4,0] = [2.5, 0.5];
        T = 0.9*2 + 0.1*1 = 1.9; c1 and c3 get [2.5, 0.5] (tag 1).
  t=3.5 c0 -> [3.5, 1.5]: G0 collects (round time 1.5), gap 1.9/2:
        Timer(3.95); applies w = [3, 1], T = 0.9*1.9 + 0.1*1.5 = 1.86.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fl_r2sp.fl.policies.base import Send, Stop, Timer
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.policies.scripted import ScriptedDriver

A_GROUP = GroupParams(num_groups=2, fraction=0.5)
A_OUTLIERS = OutlierParams(enabled=False)


def run_a(group: GroupParams = A_GROUP, outliers: OutlierParams = A_OUTLIERS) -> ScriptedDriver:
    drv = ScriptedDriver(FLR2SPPolicy(4, group, outliers))
    drv.start([0, 0])
    drv.update(1.0, 1, [4, 0])
    drv.update(2.0, 0, [2, 2])
    drv.update(2.5, 2, [10, 10])
    drv.update(2.8, 3, [-7, 5])
    drv.update(3.5, 0, [3.5, 1.5])
    drv.finish()
    return drv


def test_start_sends_initial_model_to_every_group() -> None:
    drv = ScriptedDriver(FLR2SPPolicy(4, GroupParams(num_groups=2)))
    sends = drv.start([0, 0])
    assert [(s.cids, s.tag) for s in sends] == [((0, 2), 0), ((1, 3), 0)]


def test_global_weights_order_and_gap_timers() -> None:
    drv = run_a()
    applied = [(t, m.version, m.weights.tolist()) for t, m in drv.models()]
    assert applied == [
        (2.0, 1, [1.0, 1.0]),
        (3.0, 2, [2.5, 0.5]),
        (pytest.approx(3.95), 3, [3.0, 1.0]),
    ]
    assert [t.at for _, t in drv.of(Timer)] == [pytest.approx(3.0), pytest.approx(3.95)]
    apply_rows = drv.records("group_apply")
    assert [r["group"] for r in apply_rows] == [0, 1, 0]  # G1 was ready first, waited
    assert [r["T"] for r in apply_rows] == pytest.approx([2.0, 1.9, 1.86])
    assert [r["gap"] for r in apply_rows] == pytest.approx([0.0, 1.0, 0.95])
    assert [r["turn_wait"] for r in apply_rows] == pytest.approx([0.0, 2.0, 0.45])
    collect = drv.records("group_collect")
    assert [(r["group"], r["round_time"]) for r in collect] == [(1, 1.0), (0, 2.0), (0, 1.5)]


def test_stragglers_get_newest_model_and_are_not_aggregated() -> None:
    drv = run_a()
    # c2 (older tag) is answered at once with G0's newest model, tag of G0's round 1.
    ((t, send),) = [(t, s) for t, s in drv.sends_to(2) if t > 0]
    assert t == 2.5 and send.cids == (2,) and send.tag == 1
    assert send.weights.tolist() == [1.0, 1.0]
    # c3 arrived while G1 waited for its turn: held, released with the new model.
    ((t, send),) = [(t, s) for t, s in drv.sends_to(3) if t > 0]
    assert t == 3.0 and send.cids == (1, 3) and send.weights.tolist() == [2.5, 0.5]
    actions = {r["cid"]: r["action"] for r in drv.records("client_update") if r["straggler"]}
    assert actions == {2: "replied", 3: "held"}
    assert drv.policy.summary()["num_stragglers"] == 2


def test_score_stragglers_option() -> None:
    # c2's delta [10, 10] vs G0's latest reference, the default global change
    # w_new - start = [1, 1] - [0, 0] (under "group": [2, 2]): cosine 1 either way; c3
    # arrives before G1 ever applied (no reference yet): not scored.
    drv = run_a(outliers=dataclasses.replace(A_OUTLIERS, score_stragglers=True))
    rows = [(r["cid"], r["cosine"]) for r in drv.records("client_score") if r["straggler"]]
    assert rows == [(2, pytest.approx(1.0))]
    assert not [r for r in run_a().records("client_score") if r["straggler"]]


def test_skip_if_not_ready_order() -> None:
    drv = run_a(group=dataclasses.replace(A_GROUP, strict_order=False))
    # G1 applies as soon as it collects (t=1, no earlier application): w = [2, 0],
    # T = 1; G0 collects at 2 >= 1 + 1/2 and applies: w = 0.5*[2,0] + 0.5*[2,2].
    applied = [(t, m.weights.tolist()) for t, m in drv.models()[:2]]
    assert applied == [(1.0, [2.0, 0.0]), (2.0, [2.0, 1.0])]
    assert [r["group"] for r in drv.records("group_apply")] == [1, 0, 0]


def test_cosine_references() -> None:
    # G1's application at t=3: start [0,0], before [1,1], after [2.5,0.5], c1 delta [4,0].
    scores = {}
    for ref in ("group", "global-change", "global-step"):
        drv = run_a(outliers=dataclasses.replace(A_OUTLIERS, reference=ref))
        row = [r for r in drv.records("client_score") if r["cid"] == 1][0]
        scores[ref] = row["cosine"]
    assert scores["group"] == pytest.approx(1.0)
    assert scores["global-change"] == pytest.approx(2.5 / np.sqrt(6.5))
    assert scores["global-step"] == pytest.approx(1.5 / np.sqrt(2.5))


def test_leave_one_out_reference() -> None:
    scores = {}
    for ref in ("group", "group-loo"):
        group, outliers = (
            GroupParams(num_groups=1, fraction=1.0),
            OutlierParams(enabled=True, rule="paper", reference=ref),
        )
        drv = ScriptedDriver(FLR2SPPolicy(3, group, outliers))
        drv.start([0, 0])
        for cid, delta in ((0, [1, 0]), (1, [1, 0]), (2, [0, 1])):
            drv.update(1.0, cid, delta=delta)
        scores[ref] = {r["cid"]: r["cosine"] for r in drv.records("client_score")}
    assert scores["group"][2] == pytest.approx(1 / np.sqrt(5))  # vs [2/3, 1/3]
    assert scores["group-loo"][2] == pytest.approx(0.0)  # vs mean of others [1, 0]
    assert scores["group-loo"][0] == pytest.approx(1 / np.sqrt(2))  # vs [1/2, 1/2]


def blacklist_run(warmup: int = 0) -> ScriptedDriver:
    """3 clients, M=1, C=1: client 2 pushes against the group except in round 3.

    With one group the default reference (global change) is the group's mean delta, so the
    scores are those of the "group" reading (tests/fl/policies/test_paper_pins.py checks
    the equality).
    """
    policy = FLR2SPPolicy(
        3,
        GroupParams(num_groups=1, fraction=1.0),
        OutlierParams(enabled=True, rule="paper", warmup=warmup),
        known_outliers=frozenset({1, 2}),
    )
    drv = ScriptedDriver(policy)
    drv.start([0, 0])
    for rnd in range(6):
        t = float(rnd + 1)
        drv.update(t, 0, delta=[1, 0])
        drv.update(t, 1, delta=[1, 0])
        drv.update(t, 2, delta=[1, 0] if rnd == 2 else [-1, 0])
    return drv


def test_blacklist_after_three_consecutive_low_scores_with_reset() -> None:
    drv = blacklist_run()
    streaks = [r["streak"] for r in drv.records("client_score") if r["cid"] == 2]
    assert streaks == [1, 2, 0, 1, 2, 3]  # the good round 3 resets the streak
    assert drv.records("blacklist") == [{"t": 6.0, "cid": 2, "group": 0, "known_outlier": True}]
    last_send = drv.of(Send)[-1][1]
    assert last_send.cids == (0, 1) and last_send.tag == 6  # no more jobs for client 2
    s = drv.policy.summary()
    assert s["blacklisted"] == [2]
    assert s["blacklist_precision"] == 1.0 and s["blacklist_recall"] == 0.5


def test_outlier_warmup_skips_the_first_rounds() -> None:
    drv = blacklist_run(warmup=3)
    rounds = sorted({r["round"] for r in drv.records("client_score")})
    assert rounds == [3, 4, 5]  # group rounds 0-2 are not scored
    streaks = [r["streak"] for r in drv.records("client_score") if r["cid"] == 2]
    assert streaks == [1, 2, 3] and drv.records("blacklist")[0]["t"] == 6.0


def test_threshold_follows_active_members_after_blacklisting() -> None:
    drv = blacklist_run()
    # C = 1 over 2 active members: the round completes with clients 0 and 1.
    drv.update(7.0, 0, delta=[1, 0])
    assert drv.policy.version == 6
    drv.update(7.0, 1, delta=[1, 0])
    assert drv.policy.version == 7


def test_failures_resend_then_drop_and_rethreshold() -> None:
    drv = ScriptedDriver(FLR2SPPolicy(3, GroupParams(num_groups=1, fraction=1.0), max_failures=3))
    drv.start([0, 0])
    drv.update(1.0, 0, [2, 2])
    drv.update(1.0, 1, [4, 4])
    for k in range(3):  # each of the first 3 failures is re-sent the round's model
        drv.fail(2.0 + k, 2)
        assert drv.jobs[2][0] == 0 and drv.policy.version == 0
    drv.fail(5.0, 2)  # 4th consecutive failure: dropped; need 3 -> 2: round completes
    ((t, m),) = drv.models()
    assert t == 5.0 and m.weights.tolist() == [3.0, 3.0]
    rows = drv.records("client_failure")
    assert [r["dropped"] for r in rows] == [False, False, False, True]
    assert drv.policy.summary()["dropped"] == [2]
    assert drv.of(Send)[-1][1].cids == (0, 1)


def test_failure_while_group_waits_is_held() -> None:
    drv = ScriptedDriver(
        FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=0.5, initial_round_time=2.0))
    )
    drv.start([0, 0])
    drv.update(1.0, 1, [4, 0])  # G1 ready, G0 has the turn
    drv.fail(1.5, 3)
    assert [t for t, _ in drv.sends_to(3)] == [0.0]  # held, not re-sent yet
    drv.update(2.0, 0, [2, 2])  # G0 applies; T = 0.9*2 + 0.1*2 = 2: G1 at 2 + 2/2
    drv.finish()
    t, send = drv.sends_to(3)[-1]
    assert t == 3.0 and send.cids == (1, 3) and send.tag == 1


def test_empty_group_is_skipped_and_stop_when_nobody_left() -> None:
    drv = ScriptedDriver(FLR2SPPolicy(2, GroupParams(num_groups=2, fraction=1.0), max_failures=1))
    drv.start([0])
    drv.fail(1.0, 0)
    drv.fail(2.0, 0)  # G0 is empty now: strict order skips it
    drv.update(3.0, 1, [6])
    assert [m.weights.tolist() for _, m in drv.models()] == [[3.0]]
    assert drv.stopped is None
    drv.fail(4.0, 1)
    drv.fail(5.0, 1)
    assert drv.stopped is not None and len(drv.of(Stop)) == 1


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="num_groups"):
        FLR2SPPolicy(3, GroupParams(num_groups=4))
    with pytest.raises(ValueError, match="fraction"):
        FLR2SPPolicy(3, GroupParams(num_groups=1, fraction=0.0))
    with pytest.raises(ValueError, match="reference='cmfl' .run-config key cosine-reference"):
        OutlierParams(reference="cmfl")  # type: ignore[arg-type]
    p = FLR2SPPolicy(3, GroupParams(num_groups=1))
    with pytest.raises(ValueError, match="built for"):
        p.start(0.0, np.zeros(2, np.float32), [0, 1])
    with pytest.raises(ValueError, match="flat"):
        p.start(0.0, np.zeros((2, 2), np.float32), [0, 1, 2])

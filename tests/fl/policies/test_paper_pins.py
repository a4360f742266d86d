"""What the FL-R²SP paper fixes, pinned on scripted scenarios with hand-computed values.

Each test names the semantics it pins; each was checked to fail when that
semantics is broken in the code (see the commit that added it).
"""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.base import Send
from fl_r2sp.fl.policies.factory import make_policy
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.policies.scripted import ScriptedDriver
from tests.paths import REPO

ROOT = REPO

#: The paper's constants ([ToN] §VI-B, docs/paper-notes.md §2.1, §2.4) as run-config keys.
PAPER = {
    "fraction": 0.75,  # C
    "cosine-threshold": 0.5,  # beta
    "outlier-rounds": 3,
    "ema-weight": 0.1,
    "gap-factor": 1.0,  # r (the FL part has none: 1)
    "strict-order": True,
    "aggregation": "mean",  # unweighted, Alg. 2 line 8
    "cosine-reference": "global-change",  # "the global update" (docs/architecture.md §6)
}


def test_defaults_are_the_papers_constants() -> None:
    keys = RunConfig().to_run_config()
    assert {k: keys[k] for k in PAPER} == PAPER
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    assert {k: declared["config"][k] for k in PAPER} == PAPER
    group, outliers = GroupParams(), OutlierParams(enabled=True, rule="paper")
    assert (group.fraction, group.ema_weight, group.gap_factor) == (0.75, 0.1, 1.0)
    assert (group.strict_order, group.aggregation) == (True, "mean")
    assert (outliers.cosine_threshold, outliers.rounds) == (0.5, 3)
    assert outliers.reference == "global-change"


def test_round_robin_order_with_three_groups() -> None:
    """M = 3, C = 1/2 (1 of 2), r = 1, T0 = 0; G0 = {0, 3}, G1 = {1, 4}, G2 = {2, 5}; w0 = [0].

    t=1  c2 -> [6]: G2 collects (round time 1); G0 has the turn: G2 waits.
    t=2  c0 -> [3]: G0 applies at once (no T yet): w = 2/3*0 + 1/3*3 = 1; T = 2.
         Next turn G1 (not ready): G2 keeps waiting although it is ready.
    t=3  c1 -> [9]: G1 collected; 3 >= 2 + 2/3: applies, w = 2/3 + 3 = 11/3;
         T = 0.9*2 + 0.1*3 = 2.1.
    G2 applies at 3 + 2.1/3 = 3.7: w = 2/3*11/3 + 2 = 40/9; T = 0.9*2.1 + 0.1*1 = 1.99.
    t=4  c0 -> [4] (round 1, released at 2, round time 2): G0 applies at 3.7 + 1.99/3.
    Applications: G0, G1, G2, G0. The reversed order (g - 1) % M would let G2 go second.
    """
    drv = ScriptedDriver(
        FLR2SPPolicy(6, GroupParams(num_groups=3, fraction=0.5), OutlierParams(enabled=False))
    )
    drv.start([0.0])
    drv.update(1.0, 2, [6.0])
    drv.update(2.0, 0, [3.0])
    drv.update(3.0, 1, [9.0])
    drv.update(4.0, 0, [4.0])
    drv.finish()
    rows = drv.records("group_apply")
    assert [r["group"] for r in rows] == [0, 1, 2, 0]
    t_last = 3.7 + 1.99 / 3
    assert [r["t"] for r in rows] == pytest.approx([2.0, 3.0, 3.7, t_last])
    assert rows[2]["turn_wait"] == pytest.approx(2.7)  # G2 collected at 1, waited for G0, G1
    weights = [m.weights[0] for _, m in drv.models()]
    w4 = 2 / 3 * 40 / 9 + 4 / 3
    assert weights == pytest.approx([1.0, 11 / 3, 40 / 9, w4], rel=1e-6)


def test_beta_is_the_configured_threshold() -> None:
    """beta = 0.8 (from RunConfig, through the parameter records), M = 1, C = 1, 2 clients.

    Deltas c0 = [13, -s], c1 = [7, s] with s = sqrt(51): the mean is [10, 0], so
    c1 scores 7/sqrt(49 + 51) = 0.7 and c0 13/sqrt(169 + 51) = 0.876. Under beta = 0.8, c1
    is low three rounds running and is blacklisted at the third application (t = 3); under
    beta = 0.5 nobody would be.
    """
    cfg = RunConfig(
        num_partitions=2,
        num_groups=1,
        fraction=1.0,
        outlier_filter=True,
        outlier_rule="paper",
        cosine_threshold=0.8,
    )
    drv = ScriptedDriver(make_policy(cfg, [0, 1], frozenset({1})))
    drv.start([0.0, 0.0])
    s = math.sqrt(51.0)
    for rnd in range(3):
        t = float(rnd + 1)
        drv.update(t, 0, delta=[13.0, -s])
        drv.update(t, 1, delta=[7.0, s])
    scores = {(r["cid"], r["round"]): r["cosine"] for r in drv.records("client_score")}
    assert [scores[(1, k)] for k in range(3)] == pytest.approx([0.7] * 3, abs=1e-6)
    assert [scores[(0, k)] for k in range(3)] == pytest.approx([13 / math.sqrt(220)] * 3)
    assert drv.records("blacklist") == [{"t": 3.0, "cid": 1, "group": 0, "known_outlier": True}]
    last = drv.of(Send)[-1][1]
    assert (last.cids, last.tag) == ((0,), 3)  # no more jobs for c1
    assert drv.policy.summary()["blacklisted"] == [1]


def test_straggler_gets_its_groups_model_not_the_newest_global() -> None:
    """A G0 straggler arriving after G1 applied gets G0's last aggregate (docs §6).

    4 clients, M = 2, C = 1/2, w0 = [0, 0] (G0 = {0, 2}, G1 = {1, 3}).
    t=1 c1 -> [4, 0]: G1 ready, waits for G0.  t=2 c0 -> [2, 2]: G0 applies, w = [1, 1],
    T = 2; G1 applies at 3: w = 0.5*[1, 1] + 0.5*[4, 0] = [2.5, 0.5].
    t=3.2 c2 (tag 0, G0's round 0) is a straggler: it gets G0's model [1, 1] (the global
    model right after G0's application), not the current global model [2.5, 0.5].
    """
    drv = ScriptedDriver(
        FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=0.5), OutlierParams(enabled=False))
    )
    drv.start([0.0, 0.0])
    drv.update(1.0, 1, [4.0, 0.0])
    drv.update(2.0, 0, [2.0, 2.0])
    drv.advance_to(3.0)
    assert drv.policy.weights.tolist() == [2.5, 0.5]  # G1 applied before the straggler
    drv.update(3.2, 2, [10.0, 10.0])
    ((t, send),) = [(t, s) for t, s in drv.sends_to(2) if t > 0]
    assert (t, send.cids, send.tag) == (3.2, (2,), 1)
    assert send.weights.tolist() == [1.0, 1.0]
    row = [r for r in drv.records("client_update") if r["cid"] == 2][0]
    assert (row["straggler"], row["action"]) == (True, "replied")


def test_global_change_with_one_group_is_the_group_rule() -> None:
    """M = 1 (BSP): w_new = mix(w, mean, 1) = mean, so both readings score bit for bit alike."""
    rng = np.random.default_rng(7)
    deltas = rng.normal(size=(5, 4, 6))  # 5 rounds, 4 clients, 6 weights
    deltas[:, 3] *= -1.0  # client 3 pushes the other way: it gets blacklisted
    runs = {}
    for ref in ("group", "global-change"):
        policy = FLR2SPPolicy(
            4,
            GroupParams(num_groups=1, fraction=0.75),
            OutlierParams(enabled=True, rule="paper", reference=ref),
        )
        drv = ScriptedDriver(policy)
        drv.start(np.zeros(6, np.float32))
        for rnd in range(5):
            for cid in range(4):
                drv.update(float(rnd + 1) + 0.1 * cid, cid, delta=deltas[rnd, cid])
        runs[ref] = drv
    rows = {
        ref: [(r["cid"], r["round"], r["cosine"]) for r in d.records("client_score")]
        for ref, d in runs.items()
    }
    assert rows["group"] == rows["global-change"] and len(rows["group"]) >= 10
    assert runs["group"].records("blacklist") == runs["global-change"].records("blacklist")
    assert runs["group"].records("blacklist")  # the scenario exercises the filter
    for (_, a), (_, b) in zip(runs["group"].models(), runs["global-change"].models(), strict=True):
        assert np.array_equal(a.weights, b.weights)


def test_default_reference_is_the_global_change() -> None:
    """M = 2: G1 applies at t=3 from start [0, 0]; before [1, 1], after [2.5, 0.5].

    c1's delta [4, 0] scores cos([4, 0], [2.5, 0.5]) = 2.5/sqrt(6.5) by default (the
    global update), 1.0 under "group" (its group's mean is its own update).
    """
    scores = {}
    for outliers in (OutlierParams(enabled=False), OutlierParams(enabled=False, reference="group")):
        drv = ScriptedDriver(FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=0.5), outliers))
        drv.start([0.0, 0.0])
        drv.update(1.0, 1, [4.0, 0.0])
        drv.update(2.0, 0, [2.0, 2.0])
        drv.finish()
        scores[outliers.reference] = [
            r["cosine"] for r in drv.records("client_score") if r["cid"] == 1
        ][0]
    assert scores == {
        "global-change": pytest.approx(2.5 / math.sqrt(6.5)),
        "group": pytest.approx(1.0),
    }

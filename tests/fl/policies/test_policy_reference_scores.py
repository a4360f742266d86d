"""Every cosine reading of a group round, the offline replay of the filter rule, and the knob."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fl_r2sp.fl.policies.base import Record, Update
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.policies.reference_scores import (
    blacklist_quality,
    reference_cosines,
    replay_blacklist,
    score_field,
)

R = 1 / math.sqrt(2)


def test_reference_cosines_hand_computed() -> None:
    # Start 0; clients (1, 0) and (0, 1): intra mean (0.5, 0.5). Another group moved the
    # global model to (1, 0) before this group applies with M = 2:
    # w_new = 0.5 * (1, 0) + 0.5 * (0.5, 0.5) = (0.75, 0.25).
    start, w_before = np.zeros(2), np.array([1.0, 0.0])
    v1, v2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    intra, w_new = (v1 + v2) / 2, np.array([0.75, 0.25])
    s1, s2 = reference_cosines(start, intra, w_new, w_before, [v1, v2], [1.0, 1.0])
    assert s1["group"] == pytest.approx(R) and s2["group"] == pytest.approx(R)
    assert s1["group-loo"] == pytest.approx(0.0) and s2["group-loo"] == pytest.approx(0.0)
    norm = math.sqrt(0.75**2 + 0.25**2)
    assert s1["global-change"] == pytest.approx(0.75 / norm)
    assert s2["global-change"] == pytest.approx(0.25 / norm)
    assert s1["global-step"] == pytest.approx(-R) and s2["global-step"] == pytest.approx(R)
    assert score_field("group-loo") == "cosine_group_loo"


def test_replay_follows_the_filter_rule_and_beta() -> None:
    scores = [(1, 0.4), (2, 0.6), (1, 0.3), (1, 0.6), (1, 0.1), (1, 0.2), (1, 0.4), (1, 0.1)]
    # Client 1: low, low, reset, low, low, low -> banned at index 6; later scores ignored.
    assert replay_blacklist(scores) == {1: 6}
    # With beta 0.7 the 0.6 is low too: low, low, low -> banned at index 3; client 2 has 1 low.
    assert replay_blacklist(scores, threshold=0.7) == {1: 3}
    assert replay_blacklist(scores, rounds=1) == {1: 0}


def test_blacklist_quality_counts() -> None:
    q = blacklist_quality({1: 0, 2: 4, 5: 9}, frozenset({1, 9}))
    assert q == {"blacklisted": 3.0, "honest_blacklisted": 2.0, "precision": 1 / 3, "recall": 0.5}
    assert math.isnan(blacklist_quality({}, frozenset({1}))["precision"])


def _one_round(all_references: bool) -> list[Record]:
    policy = FLR2SPPolicy(
        2,
        GroupParams(num_groups=1, fraction=1.0),
        OutlierParams(enabled=False, reference="group", all_references=all_references),
    )
    policy.start(0.0, np.zeros(2, np.float32), [0, 1])
    out = policy.on_update(1.0, Update(0, np.array([1.0, 0.0], np.float32), 1, 0))
    out += policy.on_update(2.0, Update(1, np.array([0.0, 1.0], np.float32), 1, 0))
    return [d for d in out if isinstance(d, Record) and d.kind == "client_score"]


def test_policy_records_every_reference_only_when_asked() -> None:
    rows = [r.fields for r in _one_round(True)]
    assert [r["cid"] for r in rows] == [0, 1]
    for row in rows:  # M = 1: global-change and global-step equal group; LOO is orthogonal
        assert row["cosine"] == row["cosine_group"] == pytest.approx(R)
        assert row["cosine_global_change"] == pytest.approx(R)
        assert row["cosine_global_step"] == pytest.approx(R)
        assert row["cosine_group_loo"] == pytest.approx(0.0)
    assert not any(k.startswith("cosine_") for r in _one_round(False) for k in r.fields)

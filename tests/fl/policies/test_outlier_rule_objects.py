"""Each outlier rule is one object: what each decides, by hand-computed values.

The filter and the group scorer ask the rule object (:func:`outlier_rule`) and never its name;
these pin what each object answers, that a name builds the object with the run's knobs, that
an unknown name is refused by name, and that a filter state that held the rule's name (as a
checkpoint of the previous version does) still reads as the rule.
"""

from __future__ import annotations

import math
from typing import get_args

import pytest

from fl_r2sp.fl.policies.outlier_rules import (
    MAD_SCALE,
    OUTLIER_RULES,
    OracleRule,
    OutlierRuleKind,
    PaperRule,
    RelativeRule,
    outlier_rule,
)
from fl_r2sp.fl.policies.outliers import OutlierFilter
from fl_r2sp.fl.policies.params import OutlierParams

#: median 0.55; |deviations| 0.05, 0.05, 0, 0.15, 0.45 -> MAD 0.05.
SCORES = [0.5, 0.6, 0.55, 0.7, 0.1]


def test_paper_rule_judges_by_beta_with_no_cap_nor_probation() -> None:
    rule = outlier_rule("paper", OutlierParams(mad_k=1.0, cap=0.5, probation=4))
    assert rule == PaperRule() and rule.name == "paper"
    assert rule.round_cut(SCORES) is None  # None: the filter's β judges
    assert not rule.cuts_per_round
    assert rule.allowance(8, 0.75) is None  # no cap: all 8 may go
    assert rule.probation == 0  # the relative rule's probation knob does not apply
    assert rule.streaks_ban
    assert rule.excluded_at_start([0, 1, 2], frozenset({1})) == []
    assert rule.knobs(0.5) == "beta=0.50"


def test_relative_rule_cuts_each_round_caps_and_keeps_its_probation() -> None:
    params = OutlierParams(mad_k=3.0, mad_floor=0.0, cap=0.25, probation=2)
    rule = outlier_rule("relative", params)
    assert rule == RelativeRule(k=3.0, floor=0.0, cap=0.25, probation=2)
    assert rule.name == "relative" and rule.cuts_per_round and rule.streaks_ban
    # 0.55 - 3 * 1.4826 * 0.05 = 0.32761; with a floor of 0.1 > 0.074 the cut is 0.25.
    assert rule.round_cut(SCORES) == pytest.approx(0.55 - 3 * MAD_SCALE * 0.05)
    assert rule.round_cut(SCORES) == pytest.approx(0.32761)
    assert RelativeRule(k=3.0, floor=0.1).round_cut(SCORES) == pytest.approx(0.25)
    assert rule.round_cut([]) == -math.inf
    # 8 members, C = 0.75: min(floor(0.25 * 8), 8 - 6) = 2; 16 members: min(4, 4) = 4.
    assert rule.allowance(8, 0.75) == 2 and rule.allowance(16, 0.75) == 4
    assert RelativeRule(cap=1.0).allowance(8, 0.75) == 2  # the quorum bound: 6 of 8 stay
    assert rule.probation == 2
    assert rule.excluded_at_start([0, 1, 2], frozenset({1})) == []
    assert rule.knobs(0.5) == "k=3, floor=0, cap=0.25"  # β means nothing to this rule


def test_oracle_rule_excludes_the_known_outliers_and_never_bans_by_score() -> None:
    rule = outlier_rule("oracle", OutlierParams())
    assert rule == OracleRule() and rule.name == "oracle"
    assert rule.excluded_at_start([5, 0, 3, 1, 2], frozenset({3, 1, 9})) == [1, 3]  # not 9
    assert not rule.streaks_ban
    assert rule.round_cut(SCORES) is None and not rule.cuts_per_round
    assert rule.allowance(8, 0.75) is None and rule.probation == 0
    assert rule.knobs(0.25) == "beta=0.25"


def test_every_rule_name_builds_the_rule_of_that_name() -> None:
    assert OUTLIER_RULES == get_args(OutlierRuleKind) == ("paper", "relative", "oracle")
    for name in OUTLIER_RULES:
        assert outlier_rule(name, OutlierParams()).name == name


def test_an_unknown_rule_name_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"unknown outlier rule 'median'.*paper, relative, oracle"):
        outlier_rule("median", OutlierParams())


def test_the_filter_asks_its_rule_object() -> None:
    f = OutlierFilter(OutlierParams(enabled=True, rule="paper", rounds=1), frozenset({2}))
    assert f.rule == PaperRule() and f.exclude_known([1, 2], 0.0) == []
    f.rule = OracleRule()  # the object, not a name, decides
    assert f.exclude_known([1, 2], 0.0) == [2]
    assert not f.observe(1, -1.0, 1.0)  # one low score would ban under the paper rule
    assert f.summary()["outlier_rule"] == "oracle"


def test_a_filter_state_holding_the_rules_name_reads_as_the_rule() -> None:
    # A checkpoint of the previous version restores the rule's name straight into __dict__.
    f = OutlierFilter(OutlierParams(enabled=True, rule="relative"), frozenset({4}))
    f.__dict__["rule"] = "oracle"
    assert f.rule == OracleRule()
    assert f.exclude_known([3, 4], 0.0) == [4]
    assert f.summary()["outlier_rule"] == "oracle"

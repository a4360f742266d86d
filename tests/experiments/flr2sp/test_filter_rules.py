"""The filter-rules item (issue 19): the smoke sweep, its pairs and its verdict rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.flr2sp import filter_rules as fr
from experiments.flr2sp.report import filter_help
from experiments.flr2sp.report.filter_help import note_filter_rules, sec_filter_rules


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("results")
    fr.main(["--scale", "smoke", "--seeds", "0", "--out", str(out)])
    return json.loads((Path(out) / "filter_rules" / "summary.json").read_text())


def test_smoke_sweep_runs_every_cell(summary):
    cells = {(r["case"], r["partition"]) for r in summary["table"]}
    expected = {(c, p) for c in fr.CASES for p in fr.PARTITIONS} - {("oracle", "none")}
    assert cells == expected
    assert summary["missing"] == []
    for r in summary["table"]:
        assert r["n"] == 1
        if r["case"] == "oracle":  # exactly the known outliers
            assert (r["honest_blacklisted_mean"], r["recall_mean"]) == (0, 1.0)
        if r["partition"] == "none" or r["case"] == "off":  # nothing to recall
            assert r["recall_mean"] is None


def test_smoke_report_section_marks_every_cell(summary):
    lines = sec_filter_rules(summary)
    body = [line for line in lines if line.startswith("| ") and "---" not in line]
    # One row per (partition, case), a header, the verdict table's header and rows.
    assert len(body) == len(fr.CASES) * len(fr.PARTITIONS) + 2 + len(fr.CANDIDATES)
    assert any("= off (no outliers to exclude)" in line for line in lines)
    # One seed: too little evidence, so the default stays off.
    assert summary["default"] == "off"
    assert "one seed" in note_filter_rules(summary, {})


def _run(case: str, part: str, seed: int, acc: float, honest: int = 0) -> dict:
    return dict(
        case=case,
        partition=part,
        seed=seed,
        final_accuracy=acc,
        honest_blacklisted=honest,
        honest_share=honest / 24,
    )


def _grid(seeds: int, gain: float = 0.01, honest: int = 0) -> list[dict]:
    rows = []
    for part in fr.PARTITIONS:
        for seed in range(seeds):
            rows += [_run("off", part, seed, 0.5), _run("relative", part, seed, 0.5 + gain)]
            rows.append(_run("paper", part, seed, 0.5 + gain, honest))
    return rows


def test_a_rule_that_gains_everywhere_on_three_seeds_meets_and_becomes_default():
    rows = _grid(3)
    verdict = {v["case"]: v for v in fr.verdicts(rows)}
    assert verdict["relative"]["status"] == "meets"
    assert verdict["relative"]["paired_seeds"] == 3
    assert verdict["paper-warmup"]["status"] == "too few seeds"  # never ran
    assert fr.chosen_default(rows, fr.verdicts(rows)) in ("relative", "paper")


def test_two_seeds_are_too_few_and_one_losing_seed_fails():
    assert {v["case"]: v["status"] for v in fr.verdicts(_grid(2))}["relative"] == "too few seeds"
    rows = _grid(3)
    rows[1] = _run("relative", "paper", 0, 0.499)  # seed 0 below filter off by 0.001
    verdict = {v["case"]: v for v in fr.verdicts(rows)}
    assert verdict["relative"]["status"] == "fails"
    assert verdict["relative"]["why"] == ["paper seed 0: -0.001 accuracy"]
    assert fr.chosen_default(rows, fr.verdicts(rows)) == "paper"


def test_honest_share_above_five_percent_fails_even_with_a_gain():
    rows = _grid(3, gain=0.05, honest=2)  # 2 of 24 honest = 8%
    verdict = {v["case"]: v for v in fr.verdicts(rows)}
    assert verdict["paper"]["status"] == "fails"
    assert verdict["relative"]["status"] == "meets"
    assert fr.chosen_default(rows, fr.verdicts(rows)) == "relative"
    rows = _grid(3, gain=0.05, honest=1)  # 1 of 24 = 4.2%: allowed
    assert {v["case"]: v["status"] for v in fr.verdicts(rows)}["paper"] == "meets"


def test_run_row_counts_honest_bans_and_recall():
    summary = dict(
        policy_known_outliers=[0, 1, 2, 3],
        policy_blacklisted=[1, 2, 9],
        final_accuracy=0.4,
        converged_at=None,
    )
    row = fr.run_row("relative", "paper", 0, summary, 16)
    assert row["honest_blacklisted"] == 1
    assert row["honest_share"] == pytest.approx(1 / 12)
    assert row["recall"] == pytest.approx(0.5)
    assert row["converged"] == 0.0
    assert fr.run_row("off", "paper", 0, dict(summary, policy_blacklisted=[]), 16)["recall"] is None


def test_planned_order_is_the_priority_order():
    plan = fr.planned((0, 1))
    first_later = next(i for i, (case, _, _) in enumerate(plan) if case in fr.LATER)
    assert all(case not in fr.LATER for case, _, _ in plan[:first_later])
    assert [s for _, _, s in plan[:first_later]] == sorted(s for _, _, s in plan[:first_later])
    assert plan[0] == ("off", "paper", 0)
    assert ("oracle", "none", 0) not in plan


def _met(default: str) -> dict:
    """A summary whose verdict chose ``default`` (3 seeds, nothing failing)."""
    rule = dict(min_gain=fr.MIN_GAIN, max_honest_share=fr.MAX_HONEST_SHARE, min_seeds=3)
    verdicts = [dict(case=default, status="meets", paired_seeds=3, why=[])]
    return dict(rule=rule, verdicts=verdicts, table=[dict(case="off", n=3)], default=default)


def test_engine_case_is_the_relative_rule_the_measurement_chose():
    # The engine's default (OutlierParams) is the `relative` case's knobs, not its warm-up's.
    assert fr.engine_case() == "relative"
    note = note_filter_rules(_met("relative"), {})
    assert "the default is `relative`. It is the engine's default" in note
    assert "`outlier-filter = true`, `outlier-rule = relative`" in note
    assert "disagree" not in note


def test_note_says_when_the_engine_default_is_not_the_chosen_one(monkeypatch):
    assert "the code and the records disagree" in note_filter_rules(_met("paper"), {})
    # The note reads the engine's default from the code: switch it off and `off` agrees.
    off = {**fr.scheme_defaults(), "outlier-filter": False}
    monkeypatch.setattr(fr, "scheme_defaults", lambda: off)
    monkeypatch.setattr(filter_help, "scheme_defaults", lambda: off)
    assert fr.engine_case() == "off"
    note = note_filter_rules(dict(_met("off"), verdicts=[]), {})
    assert "It is the engine's default (`outlier-filter = false`" in note

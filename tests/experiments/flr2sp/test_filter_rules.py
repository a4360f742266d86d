"""The filter-rules item: the smoke sweep, its pairs and its verdict rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.flr2sp import filter_rules as fr
from experiments.flr2sp.report import filter_help, sections
from experiments.flr2sp.report.filter_help import (
    note_filter_rules,
    note_main_job,
    note_mid,
    sec_filter_rules,
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("results")
    fr.main(["--scale", "smoke", "--seeds", "0", "--out", str(out)])
    return json.loads((Path(out) / "filter_rules_smoke" / "summary.json").read_text())


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


def _gains(rows: list[dict]) -> list[dict]:
    return fr.aggregate(fr.pairs(rows), ("case", "partition"), ("gain",))


def _record(rows: list[dict]) -> dict:
    """A setting's summary.json as far as the joint verdict reads it."""
    return dict(verdicts=fr.verdicts(rows), gains=_gains(rows))


def test_a_rule_that_gains_everywhere_on_three_seeds_meets_and_becomes_default():
    rows = _grid(3)
    verdict = {v["case"]: v for v in fr.verdicts(rows)}
    assert verdict["relative"]["status"] == "meets"
    assert verdict["relative"]["paired_seeds"] == 3
    assert verdict["paper-warmup"]["status"] == "too few seeds"  # never ran
    assert fr.chosen_default(_gains(rows), fr.verdicts(rows)) in ("relative", "paper")


def test_two_seeds_are_too_few_and_one_losing_seed_fails():
    assert {v["case"]: v["status"] for v in fr.verdicts(_grid(2))}["relative"] == "too few seeds"
    rows = _grid(3)
    rows[1] = _run("relative", "paper", 0, 0.499)  # seed 0 below filter off by 0.001
    verdict = {v["case"]: v for v in fr.verdicts(rows)}
    assert verdict["relative"]["status"] == "fails"
    assert verdict["relative"]["why"] == ["paper seed 0: -0.10 points"]
    assert fr.chosen_default(_gains(rows), fr.verdicts(rows)) == "paper"


def test_honest_share_above_five_percent_fails_even_with_a_gain():
    rows = _grid(3, gain=0.05, honest=2)  # 2 of 24 honest = 8%
    verdict = {v["case"]: v for v in fr.verdicts(rows)}
    assert verdict["paper"]["status"] == "fails"
    assert verdict["relative"]["status"] == "meets"
    assert fr.chosen_default(_gains(rows), fr.verdicts(rows)) == "relative"
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


def _met(default: str, scale: str = "laptop") -> dict:
    """A summary whose verdict chose ``default`` (3 seeds, nothing failing)."""
    rule = dict(min_gain=fr.MIN_GAIN, max_honest_share=fr.MAX_HONEST_SHARE, min_seeds=3)
    verdicts = [dict(case=default, status="meets", paired_seeds=3, why=[])]
    table = [dict(case="off", partition="paper", n=3)]
    return dict(rule=rule, verdicts=verdicts, table=table, default=default, gains=[], scale=scale)


def _both(default: str) -> dict[str, dict]:
    """Both settings' records, each choosing ``default``, keyed as the report loads them."""
    return {fr.record_item(s): _met(default, s) for s in fr.DEFAULT_OVER}


def test_engine_case_is_the_filter_off_the_measurement_chose():
    # No rule met the verdict on the laptop partitions and the main job's together,
    # so the engine's default (OutlierParams) is the filter off: the `off` case.
    assert fr.engine_case() == "off"
    main = note_main_job(_met("off", fr.MAIN_JOB), _both("off"))
    assert "No rule meets it over both, so the default is the filter switched off" in main
    assert "It is the engine's default (`outlier-filter = false`" in main
    assert "disagree" not in main
    # The laptop note defers to the main job's section when that is recorded ...
    assert "the next section" in note_filter_rules(_met("off"), _both("off"))
    # ... and gives the joint verdict itself when it is not: nothing met, default off.
    alone = note_filter_rules(_met("relative"), {"filter_rules": _met("relative")})
    assert "Not recorded: `main-job`" in alone and "It is the engine's default" in alone


def test_note_says_when_the_engine_default_is_not_the_chosen_one(monkeypatch):
    note = note_main_job(_met("relative", fr.MAIN_JOB), _both("relative"))
    assert "The default is `relative`." in note
    assert "the code and the records disagree" in note
    # The note reads the engine's default from the code: switch it on and `relative` agrees.
    on = {**fr.scheme_defaults(), "outlier-filter": True, "outlier-rule": "relative"}
    monkeypatch.setattr(fr, "scheme_defaults", lambda: on)
    monkeypatch.setattr(filter_help, "scheme_defaults", lambda: on)
    assert fr.engine_case() == "relative"
    note = note_main_job(_met("relative", fr.MAIN_JOB), _both("relative"))
    assert "It is the engine's default (`outlier-filter = true`, `outlier-rule = relative`" in note


def test_main_job_is_its_own_section_with_its_command():
    assert sections.ITEMS.index("filter_rules_main_job") == sections.ITEMS.index("filter_rules") + 1
    assert sections.command_of("filter_rules_main_job") == (
        "python -m experiments.flr2sp.filter_rules --scale main-job"
    )
    assert sections.command_of("fig15") == "python -m experiments.flr2sp.fig15"
    d = dict(_met("off", fr.MAIN_JOB), missing=[dict(case="off / paper", seed=1)])
    (line, _) = sections.missing_lines("filter_rules_main_job", d)
    assert "filter_rules --scale main-job --seeds 1`" in line


def test_mid_scale_is_its_own_section_shown_not_run_with_its_command(tmp_path: Path) -> None:
    """The mid-scale confirmation has a section even before its records exist."""
    item = fr.record_item("mid")
    assert sections.ITEMS.index(item) == sections.ITEMS.index("filter_rules_main_job") + 1
    assert sections.command_of(item) == "python -m experiments.flr2sp.filter_rules --scale mid"
    # Runs left out are listed once per case with their seeds, the seeds once in the command.
    d = dict(_met("off", "mid"), missing=[dict(case="off / none", seed=s) for s in (0, 2)])
    (line, _) = sections.missing_lines(item, d)
    assert "(2 runs: off / none seeds 0, 2); computed by" in line
    assert line.endswith("filter_rules --scale mid --seeds 0,2`.")
    assert not sections.recorded(tmp_path, item)


def _mid(rows: list[dict]) -> dict:
    """A mid-scale summary.json as far as its reading reads it."""
    table = fr.aggregate(rows, ("case", "partition"), ("final_accuracy",))
    rule = dict(min_gain=fr.MIN_GAIN, max_honest_share=fr.MAX_HONEST_SHARE, min_seeds=3)
    return dict(_record(rows), table=table, rule=rule, missing=[])


def test_mid_scale_confirms_off_only_when_every_rule_that_ran_fails():
    # relative and paper lose seed 0 on `paper`: with the default off, that is a confirmation;
    # the warm-up and probation variants never ran, so they are named, not judged.
    rows = _grid(3, gain=-0.01) + [_run("oracle", "paper", 0, 0.6)]  # oracle is no candidate
    status, absent = fr.confirmation(fr.verdicts(rows), _gains(rows), "off")
    assert status == "confirmed"
    assert absent == ["paper-warmup", "relative-warmup", "relative-probation"]
    # One rule meeting the rule here contradicts the filter off ...
    rows = _grid(3, gain=0.01)
    assert fr.confirmation(fr.verdicts(rows), _gains(rows), "off")[0] == "contradicted"
    # ... a rule without a failure on too few seeds leaves it open, and so does nothing run.
    rows = _grid(2, gain=0.01) + [_run("relative-warmup", "paper", 0, 0.4)]
    assert fr.confirmation(fr.verdicts(rows), _gains(rows), "off")[0] == "open"
    assert fr.confirmation(fr.verdicts([]), [], "off") == ("open", list(fr.CANDIDATES))


def test_mid_scale_confirms_a_chosen_rule_only_when_it_meets_the_rule_there():
    rows = _grid(3, gain=0.01)
    assert fr.confirmation(fr.verdicts(rows), _gains(rows), "relative")[0] == "confirmed"
    rows[1] = _run("relative", "paper", 0, 0.499)
    assert fr.confirmation(fr.verdicts(rows), _gains(rows), "relative")[0] == "contradicted"
    assert fr.confirmation(fr.verdicts(rows), _gains(rows), "relative-warmup")[0] == "open"


def test_mid_note_reads_the_default_chosen_over_the_other_settings():
    rows = _grid(3, gain=-0.01)[:6]  # partition paper, seeds 0-1 only
    note = note_mid(_mid(rows), _both("off"))
    assert "`off`, is **confirmed** at this scale" in note
    assert "Not run at this scale: `paper-warmup`" in note
    assert "fewer seeds than the rule asks" in note
    # Over settings that chose relative, the same losing runs contradict it.
    assert "`relative`, is **contradicted**" in note_mid(_mid(rows), _both("relative"))
    assert "fewer seeds" not in note_mid(_mid(_grid(3, gain=-0.01)), _both("off"))


def test_joint_verdict_needs_every_seed_of_the_main_job_too():
    laptop = _grid(3)  # relative and paper gain on every laptop partition and seed
    main = _grid(3, gain=0.02)
    main[1] = _run("relative", "paper", 0, 0.499)  # relative loses main-job seed 0
    records = {"laptop": _record(laptop), fr.MAIN_JOB: _record(main)}
    verdict, default = fr.joint_default(records)
    relative = next(v for v in verdict if v["case"] == "relative")
    assert relative["status"] == "fails"
    assert relative["why"] == ["main-job paper seed 0: -0.10 points"]
    assert default == "paper"  # meets on both
    # On the laptop alone relative (gain 0.01, the mean tie broken by order) was a winner.
    assert fr.verdicts(laptop)[1]["status"] == "meets"


def test_joint_default_is_off_when_no_rule_meets_both_settings():
    laptop = _grid(3)
    main = _grid(3)
    main[1] = _run("relative", "paper", 0, 0.499)
    main[2] = _run("paper", "paper", 0, 0.49)
    verdict, default = fr.joint_default({"laptop": _record(laptop), fr.MAIN_JOB: _record(main)})
    assert default == "off"
    assert {v["case"]: v["status"] for v in verdict}["paper"] == "fails"
    # A setting not recorded is zero seeds: nothing meets the rule, the default stays off.
    verdict, default = fr.joint_default({"laptop": _record(laptop), fr.MAIN_JOB: None})
    assert default == "off"
    assert {v["case"]: v["paired_seeds"] for v in verdict}["relative"] == 0


def test_chosen_default_weights_each_cell_by_its_pairs():
    gains = [
        dict(case="paper", gain_mean=0.03, n=1),
        dict(case="paper", gain_mean=0.0, n=5),  # paper: 0.03 / 6 = 0.005
        dict(case="relative", gain_mean=0.01, n=6),  # relative: 0.01
    ]
    met = [dict(case=c, status="meets") for c in ("paper", "relative")]
    assert fr.chosen_default(gains, met) == "relative"
    assert fr.chosen_default(gains, []) == "off"


def test_settings_write_their_own_records_and_filters_restrict_the_plan(tmp_path):
    assert fr.record_item("laptop") == "filter_rules"
    assert fr.record_item(fr.MAIN_JOB) == "filter_rules_main_job"
    assert fr.record_item("mid") == "filter_rules_mid"
    plan = fr.planned((0, 1), cases=("relative-warmup", "off"), partitions=("none",))
    assert plan == [
        ("off", "none", 0),
        ("off", "none", 1),
        ("relative-warmup", "none", 0),
        ("relative-warmup", "none", 1),
    ]
    with pytest.raises(SystemExit, match="unknown"):
        fr.main(["--cases", "off,nope", "--out", str(tmp_path)])
    # One main-job run: its record lands beside the laptop records, never over them.
    argv = ["--scale", fr.MAIN_JOB, "--seeds", "0", "--cases", "off", "--partitions", "paper"]
    fr.main([*argv, "--out", str(tmp_path)])
    d = json.loads((tmp_path / "filter_rules_main_job" / "summary.json").read_text())
    assert (d["scale"], d["model"], d["clients"]) == (fr.MAIN_JOB, "mlp", 32)
    assert (d["cases"], d["partitions"]) == (["off"], ["paper"])
    assert not (tmp_path / "filter_rules").exists()


def test_readings_quote_only_records_made_by_committed_code(tmp_path):
    def write(item: str, dirty: bool) -> None:
        folder = tmp_path / item
        folder.mkdir()
        d = dict(_met("off"), seeds=[0, 1, 2], cases=["off"], partitions=["paper"])
        (folder / "summary.json").write_text(json.dumps(d))
        run = dict(label="x", seed=0, code_version="c", git_commit="abc1234", git_dirty=dirty)
        (folder / "provenance.json").write_text(json.dumps(dict(runs=[run])))

    write("filter_rules", dirty=False)
    write("filter_rules_main_job", dirty=True)  # made by uncommitted edits
    assert sections.recorded(tmp_path, "filter_rules")
    assert not sections.recorded(tmp_path, "filter_rules_main_job")
    assert not sections.recorded(tmp_path, "fig15")  # no record at all
    summaries = {i: json.loads((tmp_path / i / "summary.json").read_text()) for i in _both("off")}
    lines = sections.item_lines(tmp_path, tmp_path, "filter_rules", summaries, tmp_path)
    # The laptop reading does not lean on the uncommitted main-job record: it is not recorded.
    assert "Not recorded: `main-job`" in lines[-2]

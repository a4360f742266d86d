"""experiments/flr2sp/robustness.py: the cells it runs and the table it prints (no training)."""

from __future__ import annotations

import pytest

from experiments.flr2sp.robustness import OPTIONS, config, scenarios, table_md


def test_scenarios_are_clean_then_one_and_a_quarter() -> None:
    assert scenarios(16) == [
        ("none", 0),
        ("sign-flip", 1),
        ("sign-flip", 4),
        ("scale(1000)", 1),
        ("scale(1000)", 4),
        ("huge(1e30)", 1),
        ("huge(1e30)", 4),
    ]


def test_each_option_is_told_how_many_attackers_to_expect() -> None:
    cfg = config("laptop", 1, "sign-flip", 4, "krum")
    # 16 clients in 2 groups of 8, C = 0.75: 6 collected; f = ceil(4 / 2) = 2.
    assert (cfg.num_partitions, cfg.groups, cfg.aggregation) == (16, 2, "krum")
    assert cfg.krum_malicious == 2 and cfg.trim_beta == pytest.approx(2.05 / 6)
    assert cfg.attack_fraction == 0.25 and not cfg.outlier_filter
    clean = config("laptop", 1, "none", 0, "filter+mean")
    assert (clean.krum_malicious, clean.trim_beta, clean.outlier_filter) == (0, 0.2, True)
    # The paper's filter (the engine's default rule is `relative`), and the same rule where
    # the filter is off, so every option's configuration is what it was before the
    # filter-rules study.
    assert {config("laptop", 0, "none", 0, o).outlier_rule for o in OPTIONS} == {"paper"}
    assert config("smoke", 0, "none", 0, "mean-no-norm").admission_norm_factor == 0.0


def test_table_has_one_row_per_attack_and_a_column_per_option() -> None:
    row = dict(
        attack="sign-flip",
        attackers_n=4,
        final_accuracy_mean=0.8116,
        false_blacklisted_mean=0.5,
        failed_mean=0,
    )
    table = [{**row, "option": o} for o in OPTIONS]
    table[-1].update(final_accuracy_mean=0.1, failed_mean=0.5)
    lines = table_md(table).splitlines()
    assert lines[0] == "| attack | attackers | " + " | ".join(OPTIONS) + " |"
    assert lines[2] == (
        "| sign-flip | 4 | " + " | ".join(["0.812 / 0.5"] * 5) + " | 0.100 / 0.5 failed |"
    )


def test_a_cell_is_stamped_and_its_provenance_names_the_code(tmp_path) -> None:
    import json

    from experiments.common import provenance
    from experiments.common.run_cache import parse_args
    from experiments.flr2sp.robustness import run_cell

    args = parse_args(
        "robustness", "", ["--scale", "smoke", "--seeds", "0", "--out", str(tmp_path)]
    )
    fresh = run_cell(args, 0, "sign-flip", 1, "mean")
    cached = run_cell(args, 0, "sign-flip", 1, "mean")  # from the item's run cache
    assert fresh == cached and fresh["code_version"] == provenance.code_version()
    assert fresh["config_key"] and "git_commit" in fresh and fresh["run_seconds"] > 0
    runs = json.loads(provenance.write_provenance(tmp_path).read_text())["runs"]
    assert [(r["label"], r["seed"], r["current"]) for r in runs] == [("mean-sign-flip-1", 0, True)]

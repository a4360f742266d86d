"""Every experiment script in its smoke configuration: outputs exist and make sense.

All scripts run once (module fixture) into one temporary results folder, so
that they share cached runs exactly as a real ``run_all.sh`` does. Smoke
scale: 16 clients in groups of 4 for timing items, sklearn digits with 8
clients for training items (no data files needed).
"""

from __future__ import annotations

import csv
import importlib
import json
from pathlib import Path

import pytest

ITEMS = (
    "table5",
    "fig16",
    "fig17",
    "table2",
    "fig18",
    "table4",
    "fig15",
    "outliers",
    "c_sweep",
    "outliers_scoring",
)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    for item in ITEMS:
        importlib.import_module(f"experiments.flr2sp.{item}").main(
            ["--scale", "smoke", "--seeds", "0", "--out", str(out)]
        )
    return out


def summary(results: Path, item: str) -> dict:
    return json.loads((results / item / "summary.json").read_text())


def test_every_item_writes_csv_json(results):
    for item in ITEMS:
        for name in ("runs.csv", "summary.csv", "summary.json"):
            assert (results / item / name).is_file(), f"{item}/{name} missing"
        with open(results / item / "summary.csv") as fh:
            assert list(csv.DictReader(fh)), f"{item}/summary.csv has no rows"


def test_table2_contention_slows_communication(results):
    rows = summary(results, "table2")["table"]
    assert {r["discipline"] for r in rows} == {"fair", "fcfs"}
    for r in rows:
        assert r["contended_s_mean"] > r["alone_s_mean"] > 0
        assert r["slowdown_mean"] > 1


def test_table5_bsp_pulls_longer_than_flr2sp(results):
    for r in summary(results, "table5")["table"]:
        assert r["bsp_pull_s_mean"] > r["flr2sp_pull_s_mean"] > 0
        assert 0 < r["speedup_mean"] < 1
        assert r["n"] == 1


def test_fig16_gantt_and_smaller_pulls(results):
    rows = {(r["strategy"], r["discipline"]): r for r in summary(results, "fig16")["table"]}
    assert rows[("bsp", "fair")]["avg_pull_s_mean"] > rows[("fl-r2sp", "fair")]["avg_pull_s_mean"]
    for name in ("gantt-bsp-fair.png", "gantt-fl-r2sp-fair.png"):
        assert (results / "fig16" / name).stat().st_size > 1000


def test_fig17_bsp_peak_higher_at_one_second(results):
    for r in summary(results, "fig17")["table"]:
        # Both schemes saturate the server link within 0.1 s, so only coarser bins differ.
        assert r["peak_ratio_0.1s_mean"] == pytest.approx(1.0)
        assert r["peak_ratio_1s_mean"] > 1
    assert (results / "fig17" / "egress-cnn-fair.png").is_file()


def test_fig18_group_sizes_of_16_clients(results):
    d = summary(results, "fig18")
    base = [r for r in d["table"] if r["variant"] == "baseline"]
    assert sorted(r["group_size"] for r in base) == [2, 4, 8]
    assert all(r["avg_cycle_s_mean"] >= r["avg_round_s_mean"] > 0 for r in d["table"])
    assert set(d["best_group_size"]["cnn"]) == {"avg_round_s", "avg_cycle_s"}
    assert set(d["best_by_variant"]) == {"baseline", "overhead", "jitter", "dropout", "all"}
    # A per-transfer overhead only adds time: every size's cycle grows.
    for r in base:
        over = next(
            o
            for o in d["table"]
            if o["variant"] == "overhead" and o["group_size"] == r["group_size"]
        )
        assert over["avg_cycle_s_mean"] > r["avg_cycle_s_mean"]


def test_fig15_all_schemes_with_accuracies(results):
    d = summary(results, "fig15")
    assert {r["scheme"] for r in d["table"]} == {
        "bsp",
        "bsp-nofilter",
        "asp",
        "fedasync",
        "fl-r2sp",
        "fl-r2sp-nofilter",
        "fedbuff",
    }
    assert all(0 <= r["final_accuracy_mean"] <= 1 for r in d["table"])
    assert (results / "fig15" / "accuracy-mlp.png").is_file()


def test_table4_round_time_and_convergence_rows(results):
    d = summary(results, "table4")
    assert [r["model"] for r in d["table"]] == ["mlp"]
    assert {r["discipline"] for r in d["round_time"]} == {"fair", "fcfs"}
    assert all(r["bsp_round_s_mean"] > 0 for r in d["round_time"])


def test_outliers_cases_and_rates(results):
    rows = {r["case"]: r for r in summary(results, "outliers")["table"]}
    assert set(rows) == {"fl-r2sp", "bsp", "alpha10", "alpha0.3"}
    for case in ("alpha10", "alpha0.3"):
        assert 0 <= rows[case]["false_positive_rate_mean"] <= 1
        assert rows[case]["precision_mean"] is None


def test_outliers_scoring_replays_every_reference(results):
    d = summary(results, "outliers_scoring")
    refs = {"group", "group-loo", "global-change", "global-step"}
    assert {(r["mode"], r["reference"]) for r in d["table"]} == {
        (m, ref) for m in ("paper", "paper-strict") for ref in refs
    }
    strict = next(r for r in d["shares"] if r["mode"] == "paper-strict")
    assert strict["outlier_top_over_097_mean"] == 1.0
    assert strict["regular_min_at_least_007_mean"] == 1.0
    prov = json.loads((results / "outliers_scoring" / "provenance.json").read_text())
    assert prov["runs"] and all(r["current"] for r in prov["runs"])


def test_paper_scale_lists_every_uncached_run_and_trains_none(results):
    from experiments.flr2sp.fig15 import SCHEMES

    importlib.import_module("experiments.flr2sp.paper_scale").main(
        ["--scale", "smoke", "--seeds", "0", "--out", str(results)]
    )
    d = summary(results, "paper_scale")
    # The smoke cache holds no paper-size run: every (model, scheme) of seed 0 is missing.
    assert d["scale"] == "paper" and d["runs"] == [] and d["table"] == []
    assert len(d["missing"]) == 3 * len(SCHEMES)
    assert all("--scale paper" in m["command"] for m in d["missing"])


def test_c_sweep_fractions(results):
    d = summary(results, "c_sweep")
    assert sorted({r["fraction"] for r in d["table"]}) == [0.5, 0.75, 1.0]
    assert sorted(r["fraction"] for r in d["accuracy"]) == [0.5, 0.75, 1.0]


def test_second_run_is_all_cached(results, capsys):
    importlib.import_module("experiments.flr2sp.table5").main(
        ["--scale", "smoke", "--seeds", "0", "--out", str(results)]
    )
    out = capsys.readouterr().out
    assert "running" not in out and "cached" in out


def test_report_has_every_section(results, tmp_path):
    from experiments.flr2sp.report.sections import SECTIONS
    from experiments.report import build

    text = build(results, tmp_path)
    for title, _, _ in SECTIONS.values():
        assert f"## {title}" in text
    assert "not reproduced" in text or "reproduced" in text
    assert "fitted: a calibration input" in text  # Table V's CNN pull is a fitted cell
    assert (tmp_path / "records" / "report" / "table5.csv").is_file()


def test_skip_training_uses_only_cached_runs(results, capsys):
    # Seed 7 was never run: --skip-training leaves it out instead of starting it.
    importlib.import_module("experiments.flr2sp.fig15").main(
        ["--scale", "smoke", "--seeds", "0,7", "--out", str(results), "--skip-training"]
    )
    assert "running" not in capsys.readouterr().out
    d = summary(results, "fig15")
    assert d["seeds"] == [0, 7] and {r["n"] for r in d["table"]} == {1}

"""The selective-reduce real runs' record: rows, aggregation, ratios and verdicts on hand-made
runs (no training here), with the expected values worked out by hand."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from experiments.selective import real
from experiments.selective.real_report import (
    aggregate,
    claim_verdict,
    provenance_line,
    ratio,
    ratio_lines,
    real_lines,
    table_lines,
)


def _row(seed: int, scheme: str, sync: float, scale: float, t: float | None) -> dict[str, object]:
    return {"seed": seed, "scheme": scheme, "status": "ok", "sync_s": sync, "wait_s": 0.1,
            "scale": scale, "syncs": 10, "iterations": 40, "wall_s": 8.0, "it_per_s": 5.0,
            "final_loss": 0.5, "t_target_s": t, "parameters": 1000, "caps": "1 2"}  # fmt: skip


ROWS = [
    _row(0, "partial", 0.4, 2.0, 4.0),
    _row(1, "partial", 0.6, 2.0, None),
    _row(0, "selective", 0.2, 2.5, 3.0),
    _row(1, "selective", 0.4, 2.3, 2.0),
    _row(2, "selective", 9.0, 9.0, 1.0),  # no partial run of seed 2: in no ratio
    {"seed": 2, "scheme": "partial", "status": "no summary"},
]


def test_aggregate_gives_mean_range_and_per_seed_values() -> None:
    by = {a["scheme"]: a for a in aggregate(ROWS)}
    assert list(by) == ["partial", "selective"]  # the run without a summary is left out
    sync = by["partial"]["sync_s"]
    assert sync["mean"] == pytest.approx(0.5) and (sync["lo"], sync["hi"]) == (0.4, 0.6)
    assert sync["values"] == [0.4, 0.6] and sync["n"] == 2
    target = by["partial"]["t_target_s"]  # seed 1 never reached the target
    assert target["values"] == [4.0, None] and target["n"] == 1 and target["mean"] == 4.0
    assert by["selective"]["seeds"] == [0, 1, 2]
    assert by["selective"]["scale"]["mean"] == pytest.approx((2.5 + 2.3 + 9.0) / 3)


def test_table_shows_mean_range_and_missing_seeds() -> None:
    lines = table_lines(ROWS)
    partial = next(line for line in lines if line.startswith("| partial"))
    assert "| 0, 1 | 0.500 (0.400-0.600) |" in partial
    assert partial.endswith("| 4.00 (4.00-4.00), 1 of 2 seeds |")


def test_ratio_is_of_the_means_over_paired_seeds() -> None:
    ours, per_seed = ratio(ROWS, "sync_s", "partial", "selective")
    # 1.667, not the mean of the seeds' ratios (1.75); seed 2 unpaired
    assert ours == pytest.approx((0.4 + 0.6) / (0.2 + 0.4))
    assert per_seed == pytest.approx([2.0, 1.5])
    ours, per_seed = ratio(ROWS, "t_target_s", "partial", "selective")
    assert ours == pytest.approx(4.0 / 3.0) and per_seed == pytest.approx([4.0 / 3.0])
    assert ratio(ROWS, "sync_s", "allreduce", "selective") == (None, [])


@pytest.mark.parametrize(
    ("what", "ours", "seeds", "expected"),
    [
        # 1 - 1/2.5 = 0.60 within [2/3 (1 - 1/1.89), 3/2 (1 - 1/2.55)] = [0.314, 0.912]
        ("sync time, partial / selective", 2.5, 2, "reproduced"),
        # 1 - 1/3.5 = 0.714 within; read as a share added (2.5) it would lie above 3/2 1.55
        ("sync time, partial / selective", 3.5, 3, "reproduced"),
        # 1 - 1/1.2 = 0.167: the paper's sign, below 0.314
        ("sync time, partial / selective", 1.2, 2, "same direction"),
        ("sync time, partial / selective", 0.9, 2, "**not reproduced**"),
        # 1.2 - 1 = 0.20 within [2/3 0.19, 3/2 0.25] = [0.127, 0.375]; 0.10 below it
        ("scale, selective / partial", 1.2, 1, "reproduced, one seed"),
        ("scale, selective / partial", 1.1, 3, "same direction"),
        # 1.5 - 1 = 0.50 above 3/2 0.17 = 0.255
        ("iterations per second, selective / partial", 1.5, 3, "same direction"),
        ("iterations per second, selective / partial", 1.2, 3, "reproduced"),
        ("sync time, all reduce / selective", 3.0, 3, "no paper claim"),
        ("scale, selective / partial", None, 0, "n/a"),
    ],
)
def test_claim_verdict_follows_the_range_rule(
    what: str, ours: float | None, seeds: int, expected: str
) -> None:
    assert claim_verdict(what, ours, seeds) == expected


def test_ratio_lines_judge_only_the_paper_claims() -> None:
    lines, words = ratio_lines(ROWS)
    assert "| sync time, partial / selective | 1.67x (2.00, 1.50) | 1.89-2.55x | reproduced |" in (
        lines
    )
    # scale (2.5 + 2.3) / (2.0 + 2.0) = 1.20 (seed 2 unpaired): 0.20 within [0.127, 0.375]
    assert "scale, selective / partial: 1.20x, reproduced" in words
    assert "| sync time, all reduce / selective | n/a | – | no paper claim |" in lines
    assert len(words) == 3


def test_provenance_says_when_the_tree_was_dirty() -> None:
    clean = {"git_commit": "abcdef0123456", "git_dirty": False, "code_version": "c0de",
             "run_seconds": 260.4}  # fmt: skip
    assert "commit abcdef0123 (clean tree)" in provenance_line(clean)
    assert "260 s of runs" in provenance_line(clean)
    dirty = provenance_line({**clean, "git_dirty": True, "rescored": True})
    assert "uncommitted edits" in dirty and "rescored" in dirty
    assert "stands for no commit" in provenance_line({})


def test_report_section_reads_the_record(tmp_path: Path) -> None:
    assert "Not run yet" in "\n".join(real_lines(tmp_path))
    args = {"seeds": [0, 1, 2], "workers": 8, "rounds": 20, "delays": [0.1, 0.5], "p": 2,
            "max_mb_s": 40.0, "bw_lambda": 0.1, "estimate": "measured", "target": 1.0}  # fmt: skip
    (tmp_path / "selective_real").mkdir()
    (tmp_path / "selective_real" / "results.json").write_text(
        json.dumps({"args": args, "provenance": {}, "rows": ROWS})
    )
    text = "\n".join(real_lines(tmp_path))
    assert "Runs not ok: seed 2 partial: no summary." in text
    assert "Verdicts: sync time, partial / selective: 1.67x, reproduced;" in text
    assert "(per seed: 0: 1 2; 1: 1 2; 2: 1 2)" in text


def _run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    # ready times t_start + compute_s: w0 at 1.0 (3.0), w1 at 2.0 (1.5): mean 2.25;
    # w0 at 3.0 (0.9): mean 1.2; w1 at 4.0 (0.5): mean 0.7 < 1.0, at 4.0 - t_started 0.5
    (d / "workers.csv").write_text(
        "worker,t_start,compute_s,loss\n0,0.5,0.5,3.0\n1,1.0,1.0,1.5\n"
        "0,2.0,1.0,0.9\n1,3.5,0.5,0.5\n"
    )
    (d / "summary.json").write_text(json.dumps({"t_started": 0.5}))
    return d


def test_time_to_target_is_when_the_mean_latest_loss_drops_below(tmp_path: Path) -> None:
    d = _run_dir(tmp_path)
    assert real.time_to_target(d, 1.0, workers=2) == pytest.approx(3.5)
    assert real.time_to_target(d, 0.5, workers=2) is None
    assert real.time_to_target(d, 2.5, workers=2) == pytest.approx(1.5)  # mean 2.25 at 2.0


def test_row_reads_the_summary(tmp_path: Path) -> None:
    d = _run_dir(tmp_path)
    summary = {"status": "ok", "sync_time_s": 0.12345, "queue_wait_s": 0.01, "scale": 2.0,
               "total_syncs": 80, "total_iterations": 160, "elapsed_s": 8.0,
               "final_loss": 0.51234, "run_dir": str(d), "failed_syncs": 0,
               "lost_workers": {"3": "timeout"}, "parameters": 1228810,
               "link_caps_mb_s": [31.5, 5.5]}  # fmt: skip
    r = real.row("partial", 4, summary, 100.0)
    assert (r["sync_s"], r["it_per_s"], r["final_loss"]) == (0.123, 20.0, 0.512)
    assert (r["lost_workers"], r["caps"], r["seed"]) == (1, "31.5 5.5", 4)
    assert r["t_target_s"] is None  # 8 workers expected, the file has 2
    assert real.row("selective", 1, None, 1.0) == {
        "seed": 1,
        "scheme": "selective",
        "status": "no summary",
    }


def test_rescore_keeps_only_runs_of_this_configuration(tmp_path: Path) -> None:
    ns = real.parser().parse_args(["--rounds", "5"])
    for name, scheme, seed, rounds in [("a", "partial", 0, 5), ("b", "selective", 1, 5),
                                       ("c", "partial", 0, 6), ("d", "partial", 3, 5),
                                       ("e", "allreduce", 0, 5)]:  # fmt: skip
        d = tmp_path / name
        d.mkdir()
        other = argparse.Namespace(**{**vars(ns), "rounds": rounds})
        cfg = real.config(scheme, seed, other, str(tmp_path))
        (d / "config.json").write_text(json.dumps(cfg.to_dict()))
        (d / "summary.json").write_text(json.dumps({"name": name}))
    runs = real.rescore(tmp_path, ns, [0, 1])
    assert [(s, seed, summ["name"]) for s, seed, summ in runs] == [  # run_all's order
        ("allreduce", 0, "e"),
        ("partial", 0, "a"),
        ("selective", 1, "b"),
    ]


@pytest.mark.parametrize("seeds", ["x", "0,1,1", "0,,1"])
def test_bad_seeds_are_refused_naming_the_fix(seeds: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        real.parser().parse_args(["--seeds", seeds])
    assert stop.value.code == 2 and repr(seeds) in capsys.readouterr().err


def test_a_rescore_with_nothing_to_score_leaves_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "record"
    out.mkdir()
    (out / "results.csv").write_text("kept\n")
    for where in (tmp_path / "missing", tmp_path):  # no folder; a folder without runs
        with pytest.raises(SystemExit) as stop:
            real.main(["--rescore", str(where), "--out", str(out)])
        assert stop.value.code == 2 and "the record is left as it is" in capsys.readouterr().err
    assert (out / "results.csv").read_text() == "kept\n" and sorted(out.iterdir()) == [
        out / "results.csv"
    ]

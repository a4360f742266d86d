"""The real cluster experiments' run analysis and the report's cluster section (no runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.common.markdown_cells import tally
from experiments.r2sp_cluster.real.runs import analyse, multipliers
from experiments.r2sp_cluster.report import cluster_lines


def _row(w: int, k: int, t0: float, t1: float, loss: float, batch: int = 4) -> dict[str, str]:
    return {"worker": str(w), "iteration": str(k), "t_start": str(t0), "t_end": str(t1),
            "loss": str(loss), "batch_size": str(batch)}  # fmt: skip


def test_analysis_replays_the_convergence_rule_on_push_order() -> None:
    # Two workers, target 1.0, window 1: the rule needs 1 x 2 pushes in a row whose running
    # mean of the workers' latest losses is below 1.0.
    rows = [
        _row(0, 0, 0.0, 1.0, 2.0),  # mean 2.0
        _row(1, 0, 0.0, 1.5, 0.5),  # mean (2.0 + 0.5) / 2 = 1.25
        _row(0, 1, 1.0, 2.0, 0.5),  # mean 0.5: 1 below
        _row(1, 1, 1.5, 3.0, 0.9, batch=8),  # mean 0.7: 2 below -> met at push 4
        _row(0, 2, 2.0, 4.0, 3.0),  # after the target: ignored
    ]
    got = analyse(rows, workers=2, target=1.0, window=1)
    assert got["iterations_to_target"] == 4 / 2
    assert got["samples_to_target"] == 4 + 4 + 4 + 8
    assert got["time_to_target_s"] == 3.0
    # Iterations >= 1 only: spans 1.0, 1.5, 2.0.
    assert got["iteration_s"] == pytest.approx(1.5)
    assert got["pushes"] == 5 and got["final_mean_loss"] == pytest.approx((3.0 + 0.9) / 2)


def test_a_run_that_never_meets_the_target_has_no_time_to_it() -> None:
    rows = [_row(0, k, k, k + 1.0, 2.0) for k in range(3)]
    got = analyse(rows, workers=1, target=1.0, window=1)
    assert got["iterations_to_target"] is None and got["time_to_target_s"] is None


def test_cluster_b_multipliers_follow_the_paper_speeds() -> None:
    # 917 / 429 = 2.1375..., 917 / 628 = 1.4601..., the fastest 1.
    assert multipliers(("g2.2x", "p2.x", "g3.4x")) == (2.1375, 1.4602, 1.0)


def test_report_section_reads_published_files_and_says_what_is_missing(tmp_path: Path) -> None:
    d = tmp_path / "cluster_real" / "fig11"
    d.mkdir(parents=True)
    (d / "summary.csv").write_text("tuning,time_ratio,verdict_time\nnone,1,\nidle,0.5,reproduced\n")
    cfg = {"model": "resnet32", "dataset": "cifar10", "workers": 4, "servers": 1,
           "server_bandwidth_mb_s": 0, "batch_size": 32, "lr": 0.05, "max_iterations": 30,
           "loss_threshold": 2.2, "convergence_window": 10,
           "compute_multipliers": [2, 1]}  # fmt: skip
    (d / "summary.json").write_text(json.dumps({"seeds": [0], "config": cfg}))
    text = "\n".join(cluster_lines(tmp_path))
    assert "| idle | 0.5 | reproduced |" in text
    assert "Verdicts: reproduced 1." in text
    assert "compute multipliers 2, 1" in text and "PS links unthrottled" in text
    assert "Not run (no `cluster_real/fig8/summary.csv`)" in text
    assert "Not published (no `cluster_twin/table3/summary.csv`)" in text
    assert tally([{"verdict_a": "differs", "claim_b": "holds", "other": "differs"}]) == (
        "differs 1, holds 1"
    )


def test_tuning_claim_counts_seeds_where_a_run_reached_the_target() -> None:
    from experiments.r2sp_cluster.real.fig11 import sooner

    assert sooner([(1.0, 2.0)]) == "holds"
    assert sooner([(None, 2.0)]) == "does not hold"  # only the untuned run got there
    assert sooner([(None, None)]) == "n/a"
    assert sooner([(3.0, 2.0), (1.0, None), (None, None)]) == "does not hold"  # 1 of 2: no majority

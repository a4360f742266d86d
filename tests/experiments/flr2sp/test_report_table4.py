"""Table IV's reading judges the convergence-time cut against the paper's by the report's rule."""

from __future__ import annotations

from experiments.flr2sp.report.table4 import note_table4


def _summary(improvement: float | None) -> dict:
    row = {"model": "cnn", "filter": "on", "n": 3, "improvement_mean": improvement,
           "bsp_converged_mean": 1.0, "flr2sp_converged_mean": 1.0,
           "bsp_acc_mean": 0.5, "flr2sp_acc_mean": 0.5, "tta_improvement_mean": 0.1}  # fmt: skip
    return {"scale": "converge", "table": [row], "round_time": []}


def test_a_cut_near_the_papers_is_reproduced_and_a_slowdown_is_not() -> None:
    near = note_table4(_summary(0.20), {})
    assert "convergence time cut 20.0% against the paper's 22.4%" in near
    assert "(reproduced" in near and "converged BSP 3, FL-R²SP 3 of 3 seeds" in near
    assert "**not reproduced**" in note_table4(_summary(-0.16), {})
    assert "n/a" in note_table4(_summary(None), {})

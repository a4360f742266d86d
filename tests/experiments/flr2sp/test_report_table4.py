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


def test_the_reading_splits_the_cut_into_seconds_per_round_and_rounds() -> None:
    # BSP: 20 rounds of 2.0 s; FL-R²SP: 50 rounds of 1.5 s -> 0.75x per round, 2.5x the rounds.
    # The paper: CNN 4098.81 / 10.69 = 383.4 and 3181.55 / 8.31 = 382.9 rounds -> 1.00x.
    s = _summary(-0.875)
    s["table"][0].update(bsp_round_s_mean=2.0, flr2sp_round_s_mean=1.5,
                         bsp_rounds_mean=20.0, flr2sp_rounds_mean=50.0)  # fmt: skip
    text = note_table4(s, {})
    assert "rounds take 0.75x BSP's but it needs 2.50x as many rounds" in text
    assert "(50.0 vs 20.0), where the paper's times imply 1.00x" in text
    # Without the round figures there is nothing to split.
    assert "Why:" not in note_table4(_summary(-0.875), {})

"""The executor section's CPU-goal sentence: processes executor against the limit loops."""

from __future__ import annotations

from experiments.flr2sp.report.executor import cpu_goal_text


def _bench(proc_rate: float) -> dict:
    rows = [
        {"label": "limit (batch 512, 2 thr)", "samples_per_s": 938.0},
        {"label": "limit (batch 512, 1 thr)", "samples_per_s": 3657.0},
        {"label": "processes (2 proc.)", "samples_per_s": proc_rate},
    ]
    return dict(
        source="cpu_x", model="cnn", clients=128, tau=100, cores=2, load_before=6.1, rows=rows
    )


def test_time_ratios_and_goal_against_the_fastest_loop() -> None:
    text = cpu_goal_text({"benches": [_bench(3165.0)]})
    # 938 / 3165 = 0.296, 3657 / 3165 = 1.155: within 1.3x of the fastest loop
    assert "0.30x the time of limit (batch 512, 2 thr)" in text
    assert "1.16x the time of limit (batch 512, 1 thr)" in text
    assert "is met" in text


def test_goal_not_met_when_slower_than_1_3x() -> None:
    text = cpu_goal_text({"benches": [_bench(2000.0)]})  # 3657 / 2000 = 1.83
    assert "1.83x the time of limit (batch 512, 1 thr)" in text
    assert "**not met**" in text


def test_logs_without_a_processes_row_say_nothing() -> None:
    bench = _bench(1.0)
    bench["rows"] = bench["rows"][:2]
    assert cpu_goal_text({"benches": [bench]}) == ""

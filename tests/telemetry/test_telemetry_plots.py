"""Run plots write non-empty PNG files and skip what has no data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fl_r2sp.telemetry.gantt import client_order, default_window
from fl_r2sp.telemetry.plots import (
    plot_accuracies,
    plot_accuracy,
    plot_gantt,
    plot_gap_cdf,
    plot_trace,
    write_run_plots,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 1000 and path.read_bytes()[:8] == PNG


def _cyclic_jobs(n_clients: int = 4, n_rounds: int = 10, cycle: float = 10.0) -> list[dict]:
    """Client c of group c % 2 runs rounds of ``cycle`` s: pull 1, train 4, delay .5, push 1."""
    jobs = []
    for c in range(n_clients):
        for k in range(n_rounds):
            t = k * cycle + 0.2 * c
            row = dict(
                cid=c,
                job=k,
                tag=k,
                group=c % 2,
                dispatch=t,
                pull_end=t + 1,
                train_end=t + 5,
                delay=0.5,
                push_start=t + 5.5,
                push_end=t + 6.5,
            )
            if k < n_rounds - 1:
                row["wait_end"] = t + cycle
            jobs.append(row)
    return jobs


def test_default_window_is_three_cycles_in_the_middle() -> None:
    jobs = _cyclic_jobs(n_clients=1)
    # Run spans 0 .. 96.5 (last push_end); median cycle 10 -> width 30 centred on 48.25.
    lo, hi = default_window(jobs)
    assert (lo, hi) == pytest.approx((33.25, 63.25))
    short = _cyclic_jobs(n_clients=1, n_rounds=2)
    assert default_window(short) == pytest.approx((0.0, 16.5))  # shorter than 3 cycles: all
    with pytest.raises(ValueError, match="nothing to chart"):
        default_window([{"cid": 0}])


def test_client_order_groups_first() -> None:
    jobs = [
        dict(cid=3, group=1),
        dict(cid=0, group=0),
        dict(cid=1, group=1),
        dict(cid=2, group=0),
        dict(cid=9, group=None),
        dict(cid="4", group=""),
    ]
    assert [c for _, c in client_order(jobs)] == [0, 2, 1, 3, "4", 9]


def test_each_plot_writes_a_png(tmp_path: Path) -> None:
    history = [dict(version=v, time=2.0 * v, accuracy=0.1 * v, loss=1.0) for v in range(1, 6)]
    assert _is_png(plot_accuracy(history, tmp_path / "acc.png"))
    assert _is_png(plot_accuracies({"BSP": history, "FL-R2SP": history[:3]}, tmp_path / "accs.png"))
    jobs = _cyclic_jobs()
    assert _is_png(plot_gantt(jobs, tmp_path / "gantt.png", max_clients=3))
    assert _is_png(plot_gantt(jobs, tmp_path / "gantt_window.png", t_from=0.0, t_to=25.0))
    t = np.arange(50) * 0.1
    traces = {"BSP": (t, np.where(t < 1, 8e5, 0.0)), "FL-R2SP": (t, np.full(50, 2e5))}
    assert _is_png(plot_trace(traces, 0.1, tmp_path / "egress.png", title="server egress"))
    gaps = {"even": np.full(5, 2.0), "spread": np.array([1.0, 2.0, 4.0])}
    assert _is_png(plot_gap_cdf(gaps, tmp_path / "gaps.png"))


def test_plots_refuse_empty_data(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_accuracy([{"time": 1.0}], tmp_path / "a.png")
    with pytest.raises(ValueError, match="empty"):
        plot_trace({"x": (np.array([]), np.array([]))}, 0.1, tmp_path / "b.png")
    with pytest.raises(ValueError, match="no gaps"):
        plot_gap_cdf({"x": np.array([])}, tmp_path / "c.png")
    with pytest.raises(ValueError, match="t_from"):
        plot_gantt(_cyclic_jobs(), tmp_path / "d.png", t_from=5.0, t_to=5.0)
    with pytest.raises(ValueError, match="max_clients"):
        plot_gantt(_cyclic_jobs(), tmp_path / "d.png", max_clients=0)
    assert not list(tmp_path.iterdir())


def test_write_run_plots_full_and_sparse(tmp_path: Path) -> None:
    jobs = _cyclic_jobs()
    records = [
        {"kind": "group_apply", "time": t, "t_apply": t, "group": int(t) % 2}
        for t in np.arange(7.0, 90.0, 5.0)
    ]
    records.append({"kind": "eval", "time": 50.0, "version": 3, "accuracy": 0.5})
    t = np.arange(100) * 0.1
    traces = {"server-egress": (t, np.ones(100)), "server-ingress": (t, np.ones(100))}
    written = write_run_plots(tmp_path / "run", jobs, records, traces, 0.1, history=None)
    assert [p.name for p in written] == ["accuracy.png", "gantt.png", "egress.png", "gaps.png"]
    assert all(_is_png(p) for p in written)
    # Wall-clock rows only (dispatch/push_end), no records, no traces: only a Gantt chart.
    wall = [dict(cid=c, dispatch=float(c), push_end=c + 2.0, delay=0.3) for c in range(3)]
    written = write_run_plots(tmp_path / "wall", wall, [], None, 0.1, history=[])
    assert [p.name for p in written] == ["gantt.png", "gaps.png"]  # gaps from update arrivals
    assert write_run_plots(tmp_path / "empty", [], [], {}, 0.1) == []
    assert write_run_plots(tmp_path / "bare", [{"cid": 0}], [{"kind": "eval"}], {}, 0.1) == []

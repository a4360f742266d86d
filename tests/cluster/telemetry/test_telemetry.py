"""Cluster telemetry on hand-made rows: the run directory, statistics and figures."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest

from fl_r2sp.cluster.telemetry import (
    MARKER,
    WORKER_FIELDS,
    ClusterRunWriter,
    gantt_window,
    gap_stats,
    job_rows,
    plots,
    read_rows,
    summarize,
)
from fl_r2sp.cluster.telemetry import writer as writer_mod

# Two workers, two iterations each; worker 1's second iteration blocks 0.5 s.
ROWS = [
    dict(worker=0, iteration=0, blocking_s=0.0, pull_s=0.1, compute_s=0.5, push_s=0.2,
         batch_size=32, staleness=0, loss=2.0, t_start=0.0, t_end=0.8),
    dict(worker=1, iteration=0, blocking_s=0.0, pull_s=0.1, compute_s=0.5, push_s=0.2,
         batch_size=32, staleness=1, loss=2.2, t_start=0.0, t_end=0.8),
    dict(worker=0, iteration=1, blocking_s=0.0, pull_s=0.1, compute_s=0.5, push_s=0.2,
         batch_size=64, staleness=1, loss=1.5, t_start=0.8, t_end=1.6),
    dict(worker=1, iteration=1, blocking_s=0.5, pull_s=0.1, compute_s=0.5, push_s=0.2,
         batch_size=32, staleness=3, loss=float("nan"), t_start=0.8, t_end=2.1),
]  # fmt: skip
# Shard 0 gaps: 0, 0.0005, 0.9995; shard 1 gap: 3.
PS = [(0, 0, 0, 1.0), (0, 1, 0, 0.0), (0, 0, 1, 0.0005), (0, 1, 1, 0.0), (1, 0, 0, 2.0),
      (1, 1, 0, 5.0)]  # fmt: skip


def _filled(run_dir: Path) -> ClusterRunWriter:
    w = ClusterRunWriter(run_dir, config={"scheme": "r2sp", "workers": 2})
    for row in ROWS:
        w.worker_row(**row)
    for shard, worker, it, t in PS:
        w.ps_row(shard, worker, it, t)
    w.trace_rows([{"worker": 0, "iteration": 1, "at": 0.8, "T_active": 0.8}])
    return w


def test_close_writes_all_files_with_the_marker_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    real = writer_mod._write_atomic
    filled = _filled(tmp_path / "run")  # the live files are already there
    monkeypatch.setattr(
        writer_mod, "_write_atomic", lambda p, t: (order.append(p.name), real(p, t))
    )
    run = filled.close({"stop": "max_iterations", "wall_s": float("inf")})
    assert order == ["workers.csv", "ps_updates.csv", "permissions.csv", "run.json", MARKER]
    assert sorted(p.name for p in run.iterdir()) == sorted(order)  # no temporary file left
    doc = json.loads((run / "run.json").read_text())
    assert doc["config"] == {"scheme": "r2sp", "workers": 2}
    assert doc["summary"] == {"stop": "max_iterations", "wall_s": None}  # inf -> null
    assert doc["stats"]["iterations"] == 4


def test_csv_columns_extras_and_blanks(tmp_path: Path) -> None:
    w = ClusterRunWriter(tmp_path)
    w.worker_row(worker=0, iteration=0, loss=1.0, shard_bytes=10)
    w.worker_row(worker=1, iteration=0, extra="x")
    w.close()
    rows = read_rows(tmp_path / "workers.csv")
    header = (tmp_path / "workers.csv").read_text().splitlines()[0].split(",")
    assert header == [*WORKER_FIELDS, "shard_bytes", "extra"]
    assert rows[0]["loss"] == "1.0" and rows[0]["extra"] == "" and rows[1]["pull_s"] == ""
    assert read_rows(tmp_path / "permissions.csv") == []


def test_every_csv_grows_row_by_row_before_close(tmp_path: Path) -> None:
    w = _filled(tmp_path)  # never closed: a run whose rank 0 was killed
    assert not (tmp_path / MARKER).exists()
    workers = read_rows(tmp_path / "workers.csv")
    assert [(int(r["worker"]), int(r["iteration"])) for r in workers] == [(0, 0), (1, 0), (0, 1),
                                                                         (1, 1)]  # fmt: skip
    assert [float(r["t"]) for r in read_rows(tmp_path / "ps_updates.csv")] == [t for *_, t in PS]
    assert read_rows(tmp_path / "permissions.csv") == [
        {"worker": "0", "iteration": "1", "at": "0.8", "T_active": "0.8"}]  # fmt: skip
    # A row with a new column widens the header; the earlier rows keep their values.
    w.trace_rows([{"event": "hold", "at": 0.5, "worker": 1}])
    rows = read_rows(tmp_path / "permissions.csv")
    assert list(rows[0]) == ["worker", "iteration", "at", "T_active", "event"]
    assert rows[0]["T_active"] == "0.8" and rows[1] == {"worker": "1", "iteration": "",
                                                        "at": "0.5", "T_active": "",
                                                        "event": "hold"}  # fmt: skip
    w.worker_row(worker=0, iteration=2, loss=1.0)  # known columns: appended
    assert len(read_rows(tmp_path / "workers.csv")) == 5


def test_close_sorts_the_trace_when_asked(tmp_path: Path) -> None:
    w = ClusterRunWriter(tmp_path, trace_order="at")
    w.trace_rows([{"event": "permission", "at": 2.0}, {"event": "delivered", "at": 1.0},
                  {"event": "hold", "at": 1.0}])  # fmt: skip
    assert [r["at"] for r in read_rows(tmp_path / "permissions.csv")] == ["2.0", "1.0", "1.0"]
    w.close()
    rows = read_rows(tmp_path / "permissions.csv")
    assert [r["event"] for r in rows] == ["delivered", "hold", "permission"]  # stable


def test_bad_rows_and_use_after_close(tmp_path: Path) -> None:
    w = ClusterRunWriter(tmp_path)
    with pytest.raises(ValueError, match="'iteration'"):
        w.worker_row(worker=0)
    with pytest.raises(ValueError, match="'worker'"):
        w.worker_row(worker="0", iteration=1)
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.ps_row(0, 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="closed"):
        w.close()


def test_rows_from_many_threads_are_all_kept(tmp_path: Path) -> None:
    w = ClusterRunWriter(tmp_path)

    def push(shard: int) -> None:
        for i in range(500):
            w.ps_row(shard, 0, i, float(i))

    threads = [threading.Thread(target=push, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert len(w.ps) == 2000


def test_summary_statistics_by_hand() -> None:
    ps = [dict(shard=s, worker=w, iteration=i, t=t) for s, w, i, t in PS]
    stats = summarize(ROWS, ps)
    assert stats["iterations"] == 4 and stats["workers"] == 2
    assert stats["avg_iteration_s"] == pytest.approx((0.8 + 0.8 + 0.8 + 1.3) / 4)
    assert stats["avg_blocking_s"] == pytest.approx(0.125)
    assert stats["avg_permission_s"] is None  # never logged
    assert stats["max_staleness"] == 3 and stats["avg_staleness"] == pytest.approx(1.25)
    assert stats["samples_per_s"] == pytest.approx(160 / 2.1)
    # Worker 0's last loss is 1.5; worker 1's last iteration has NaN, so its iteration 0 counts.
    assert stats["last_loss"] == pytest.approx((1.5 + 2.2) / 2)
    assert stats["gap_count"] == 4 and stats["gap_mean_s"] == pytest.approx(1.0)
    assert stats["zero_gap_fraction"] == pytest.approx(0.5)  # 0 and 0.0005 of 4 gaps
    assert gap_stats(ps, zero_gap_s=0.0)["zero_gap_fraction"] == pytest.approx(0.25)


def test_statistics_read_back_from_csv_match(tmp_path: Path) -> None:
    _filled(tmp_path).close()
    again = summarize(read_rows(tmp_path / "workers.csv"), read_rows(tmp_path / "ps_updates.csv"))
    stored = json.loads((tmp_path / "run.json").read_text())["stats"]
    for key, value in stored.items():
        if value is None:
            assert again[key] is None or (isinstance(again[key], float) and math.isnan(again[key]))
        else:
            assert again[key] == pytest.approx(value), key


def test_job_rows_lay_phases_end_to_end_after_blocking() -> None:
    jobs = job_rows([ROWS[3]])
    assert jobs[0] == {"cid": 1, "push_end": 0.8, "wait_end": 1.3}
    assert jobs[1] == pytest.approx(
        {"cid": 1, "dispatch": 1.3, "pull_end": 1.4, "train_end": 1.9, "push_start": 1.9,
         "push_end": 2.1}
    )  # fmt: skip
    assert len(job_rows([ROWS[0]])) == 1  # no blocking, no wait row
    assert job_rows([{"worker": 0, "iteration": 0}]) == []


def test_gantt_window() -> None:
    assert gantt_window(ROWS) == (0.0, 2.1)  # 4 median iterations (3.2 s) cover the run
    assert gantt_window(ROWS, iterations=1.0) == pytest.approx((0.65, 1.45))
    with pytest.raises(ValueError, match="nothing to chart"):
        gantt_window([{"worker": 0}])


def test_plots_write_gantt_and_gap_cdf(tmp_path: Path) -> None:
    _filled(tmp_path).close()
    written = plots(tmp_path)
    assert [p.name for p in written] == ["gantt.png", "gaps.png"]
    for path in written:
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_plots_skip_missing_data(tmp_path: Path) -> None:
    w = ClusterRunWriter(tmp_path)
    w.ps_row(0, 0, 0, 1.0)  # one arrival: no gap
    w.close()
    assert plots(tmp_path) == []

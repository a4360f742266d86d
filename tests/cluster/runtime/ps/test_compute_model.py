"""The emulated compute model: cost × batch × multiplier, served by sleeping."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.local import run_local
from fl_r2sp.cluster.runtime.ps import compute_model
from fl_r2sp.cluster.schemes import scheme_params


def _fake_time(monkeypatch: pytest.MonkeyPatch, ticks: list[float]) -> list[float]:
    """Replace the module's clock by ``ticks`` and record the sleeps instead of sleeping."""
    slept: list[float] = []
    it = iter(ticks)
    fake = SimpleNamespace(perf_counter=lambda: next(it), sleep=slept.append)
    monkeypatch.setattr(compute_model, "time", fake)
    return slept


def test_calibrate_takes_the_fastest_pass_per_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    # passes of 0.30, 0.20 and 0.25 s over 10 samples: the least contended one, 0.02 s/sample
    _fake_time(monkeypatch, [0.0, 0.30, 1.0, 1.20, 2.0, 2.25])
    calls: list[int] = []
    assert compute_model.calibrate(lambda: calls.append(1), 10) == pytest.approx(0.02)
    assert len(calls) == compute_model.CALIBRATION_PASSES
    with pytest.raises(ValueError, match="batch"):
        compute_model.calibrate(lambda: None, 0)


def test_serve_sleeps_the_rest_of_cost_times_batch_times_multiplier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept = _fake_time(monkeypatch, [])
    target = compute_model.target_s(0.002, 64, 3.0)  # 0.002 s/sample · 64 · 3
    assert target == pytest.approx(0.384)
    assert compute_model.serve(target, 0.1) == pytest.approx(0.284)
    assert compute_model.serve(target, 0.5) == 0.0  # the real pass overran: no sleep
    assert slept == [pytest.approx(0.284)]


def test_emulated_workers_report_the_device_time(tmp_path: Path) -> None:
    """Every row's target is its worker's measured cost × batch × multiplier, and the compute
    lasts at least that long (sleeping can only lengthen it); the real model has no target."""
    cfg = ClusterConfig(
        workers=2, servers=1, scheme=scheme_params("asp"), model="mlp", dataset="synthetic",
        batch_size=8, max_iterations=3, timeout_s=20.0, run_timeout_s=60.0,
        run_dir=str(tmp_path), eval_samples=0, progress_s=0.0, plots=False,
        compute_multipliers=(1.0, 4.0), compute_model="emulated",
    )  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    with open(Path(run.summary["run_dir"]) / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    for r in rows:
        m = cfg.compute_multipliers[int(r["worker"])]
        cost = float(r["cost_per_sample_s"])
        assert cost > 0
        assert float(r["compute_target_s"]) == compute_model.target_s(cost, 8, m)
        assert float(r["compute_s"]) >= float(r["compute_target_s"])

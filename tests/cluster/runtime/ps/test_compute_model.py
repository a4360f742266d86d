"""The emulated compute model: cost × batch × multiplier, served by sleeping."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from fl_r2sp.cluster.cli import parse
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.runtime.ps import compute_model
from fl_r2sp.cluster.schemes import scheme_params


def _fake_time(monkeypatch: pytest.MonkeyPatch, ticks: list[float]) -> list[float]:
    """Replace the module's clock by ``ticks`` and record the sleeps instead of sleeping."""
    slept: list[float] = []
    it = iter(ticks)
    fake = SimpleNamespace(perf_counter=lambda: next(it), sleep=slept.append)
    monkeypatch.setattr(compute_model, "time", fake)
    return slept


def test_calibrate_takes_the_median_pass_after_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 untimed warm-up calls, then passes of 0.30, 0.20, 0.25, 0.90, 0.22 s over 10 samples:
    # the median pass 0.25 s -> 0.025 s/sample (the 0.90 s stray pass does not move it)
    ticks = [0.0, 0.30, 1.0, 1.20, 2.0, 2.25, 3.0, 3.90, 4.0, 4.22]
    _fake_time(monkeypatch, ticks)
    calls: list[int] = []
    assert compute_model.calibrate(lambda: calls.append(1), 10) == pytest.approx(0.025)
    assert len(calls) == compute_model.WARMUP_PASSES + compute_model.CALIBRATION_PASSES == 7
    with pytest.raises(ValueError, match="batch"):
        compute_model.calibrate(lambda: None, 0)


def test_the_shared_cost_is_the_median_of_the_workers_costs() -> None:
    assert compute_model.shared_cost([0.004, 0.030, 0.005, 0.006, 0.0045]) == 0.005
    assert compute_model.shared_cost([0.004, 0.006]) == pytest.approx(0.005)
    with pytest.raises(ValueError, match="no calibrated cost"):
        compute_model.shared_cost([])


def test_emulation_summary_gives_the_base_cost_and_the_overrun_share() -> None:
    rows = [{"cost_per_sample_s": 0.002, "overrun": k == 1} for k in range(4)]  # live rows
    assert compute_model.emulation_summary(rows) == {"sample_cost_s": 0.002,
                                                     "overrun_share": 0.25}  # fmt: skip
    read_back = [{"cost_per_sample_s": "0.002", "overrun": str(k < 3)} for k in range(4)]
    assert compute_model.emulation_summary(read_back)["overrun_share"] == 0.75
    assert compute_model.emulation_summary([{"overrun": ""}]) == {
        "sample_cost_s": None, "overrun_share": None}  # fmt: skip
    assert compute_model.overrun_warning(0.25) is not None
    assert "25%" in str(compute_model.overrun_warning(0.25))
    assert compute_model.overrun_warning(0.10) is None  # at the limit: no warning
    assert compute_model.overrun_warning(None) is None


def test_serve_sleeps_the_rest_of_cost_times_batch_times_multiplier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept = _fake_time(monkeypatch, [])
    target = compute_model.target_s(0.002, 64, 3.0)  # 0.002 s/sample · 64 · 3
    assert target == pytest.approx(0.384)
    assert compute_model.serve(target, 0.1) == pytest.approx(0.284)
    assert compute_model.serve(target, 0.5) == 0.0  # the real pass overran: no sleep
    assert slept == [pytest.approx(0.284)]


def _emulated(tmp_path: Path, **kw: object) -> ClusterConfig:
    return ClusterConfig(
        workers=2, servers=1, scheme=scheme_params("asp"), model="mlp", dataset="synthetic",
        batch_size=8, max_iterations=3, timeout_s=20.0, run_timeout_s=60.0,
        run_dir=str(tmp_path), eval_samples=0, progress_s=0.0, plots=False,
        compute_multipliers=(1.0, 4.0), compute_model="emulated", **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def _rows(summary: dict[str, object]) -> list[dict[str, str]]:
    with open(Path(str(summary["run_dir"])) / "workers.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_fixed_sample_cost_sets_every_target_to_cost_times_batch_times_multiplier(
    tmp_path: Path,
) -> None:
    """--sample-cost 0.01: worker 0 (m = 1) 0.01 · 8 · 1 = 0.08 s, worker 1 (m = 4) 0.32 s, in
    every iteration; the compute lasts at least that (sleeping can only lengthen it)."""
    run = run_local(_emulated(tmp_path, sample_cost_s=0.01))
    assert run.summary is not None and run.summary["status"] == "ok", run
    rows = _rows(run.summary)
    assert len(rows) == 6
    for r in rows:
        want = {"0": 0.08, "1": 0.32}[r["worker"]]
        assert float(r["cost_per_sample_s"]) == 0.01
        assert float(r["compute_target_s"]) == pytest.approx(want, rel=1e-12)
        assert float(r["compute_s"]) >= float(r["compute_target_s"])
    assert run.summary["sample_cost_s"] == 0.01
    share = sum(r["overrun"] == "True" for r in rows) / 6
    assert run.summary["overrun_share"] == pytest.approx(share)


def test_auto_gives_every_worker_the_same_base_cost(tmp_path: Path) -> None:
    """auto: one cost measured per run and shared, so both workers' rows carry the same cost
    (each worker's own calibration would differ in its last digits), and targets follow it."""
    run = run_local(_emulated(tmp_path))
    assert run.summary is not None and run.summary["status"] == "ok", run
    rows = _rows(run.summary)
    costs = {r["cost_per_sample_s"] for r in rows}
    assert len(costs) == 1, costs
    cost = float(costs.pop())
    assert cost > 0 and run.summary["sample_cost_s"] == cost
    for r in rows:
        m = (1.0, 4.0)[int(r["worker"])]
        assert float(r["compute_target_s"]) == compute_model.target_s(cost, 8, m)


@pytest.mark.parametrize("value", ["0", "-0.01", "nan", "inf", "fast", ""])
def test_an_invalid_sample_cost_exits_2_with_a_message(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(["--scheme", "asp", "--compute-model", "emulated", "--sample-cost", value])
    assert exc.value.code == 2
    assert "argument --sample-cost: expected auto or a finite" in capsys.readouterr().err


def test_sample_cost_parses_auto_and_needs_the_emulated_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg, _ = parse(["--scheme", "asp", "--compute-model", "emulated", "--sample-cost", "0.002"])
    assert isinstance(cfg, ClusterConfig) and cfg.sample_cost_s == 0.002
    cfg, _ = parse(["--scheme", "asp", "--compute-model", "emulated", "--sample-cost", "auto"])
    assert isinstance(cfg, ClusterConfig) and cfg.sample_cost_s is None
    with pytest.raises(SystemExit) as exc:
        parse(["--scheme", "asp", "--sample-cost", "0.002"])  # real compute: refused
    assert exc.value.code == 2
    assert "needs compute_model emulated" in capsys.readouterr().err
    with pytest.raises(ValueError, match="sample_cost_s"):
        ClusterConfig(compute_model="emulated", sample_cost_s=float("nan")).validate(False)


@pytest.mark.parametrize("name", ["osp", "osp-c"])
def test_osp_refuses_the_emulated_compute_model(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """OSP's worker has its own loop and never calibrates: emulated compute would be silently
    ignored (real compute times), so the setting is refused with exit 2."""
    flags = ["--scheme", name, "--momentum", "0", "--workers", "2", "--servers", "2"]
    cfg, _ = parse(flags)  # real compute: accepted
    assert isinstance(cfg, ClusterConfig) and cfg.compute_model == "real"
    with pytest.raises(SystemExit) as exc:
        parse([*flags, "--compute-model", "emulated"])
    assert exc.value.code == 2
    assert "--compute-model emulated is not built for --scheme " + name in capsys.readouterr().err

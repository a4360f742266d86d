"""The real cluster runtime on CPU/gloo: every test starts a small job (tiny MLP, synthetic
data) as plain processes (:func:`fl_r2sp.cluster.local.run_local`), bounded by the
run's timeouts, except the last two, which go through the one-command launcher (its
supervision of lost ranks: ``tests/cluster/runtime/test_one_command.py``)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.data import BatchStream, make_dataset
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.models import batch_loss, build_cluster_model
from fl_r2sp.cluster.runtime.ps.server import KILL_SERVER_ENV
from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV, worker_seed
from fl_r2sp.cluster.schemes import scheme_params

#: Largest shortfall of a real permission gap below the policy's r·T/N we accept (scheduling
#: of the coordinator thread on a loaded 2-core machine; the gaps are ~20 ms).
GAP_TOLERANCE_S = 0.005


def _cfg(tmp_path: Path, scheme: str, **kw: Any) -> ClusterConfig:
    base: dict[str, Any] = dict(
        workers=3, servers=2, scheme=scheme_params(scheme), model="mlp", dataset="synthetic",
        batch_size=8, lr=0.1, max_iterations=6, timeout_s=20.0, run_timeout_s=60.0,
        run_dir=str(tmp_path), eval_samples=0, progress_s=0.0, plots=False,
    )  # fmt: skip
    base.update(kw)
    return ClusterConfig(**base)


def _rows(run_dir: str, name: str) -> list[dict[str, str]]:
    with open(Path(run_dir) / name, newline="") as fh:
        return list(csv.DictReader(fh))


#: BSP against the one-process reference (on the CPU): float rounding of the device's kernels.
BSP_TOLERANCE = {"cpu": 1e-6, "cuda": 1e-5}


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=[
                pytest.mark.cuda,
                pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
            ],
        ),
    ],
)
def test_bsp_equals_single_process_sgd_on_the_same_batches(tmp_path: Path, device: str) -> None:
    cfg = _cfg(tmp_path, "bsp", max_iterations=5, devices=(device,))
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    assert run.exitcodes == [0] * cfg.world_size
    got = torch.load(Path(run.summary["run_dir"]) / "final_params.pt")["flat"]

    # Reference: one process, the same seeded batches per worker, gradients averaged.
    model = build_cluster_model("mlp", 10, cfg.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    train = make_dataset("mlp", "synthetic", None, cfg.seed, include_test=False).train
    streams = [BatchStream(train, cfg.batch_size, torch.Generator().manual_seed(
        worker_seed(cfg.seed, w))) for w in range(cfg.workers)]  # fmt: skip
    for _ in range(cfg.max_iterations):
        grads = []
        for stream in streams:
            model.zero_grad()
            batch_loss(model, *stream.take()).backward()
            grads.append(torch.cat([p.grad.reshape(-1) for p in params]))  # type: ignore[union-attr]
        flat = nn.utils.parameters_to_vector(params).detach()
        flat -= cfg.lr * torch.stack(grads).mean(0)
        nn.utils.vector_to_parameters(flat, params)
    want = nn.utils.parameters_to_vector(params).detach()
    assert got.shape == want.shape == (4810,)
    assert (got - want).abs().max().item() <= BSP_TOLERANCE[device]
    assert run.summary["updates_applied"] == [15, 15] and run.summary["max_staleness"] == 0


def test_asp_applies_every_update_exactly_once(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "asp", max_iterations=10)
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    # 3 workers x 10 iterations, on each of the 2 shards.
    assert run.summary["updates_applied"] == [30, 30]
    arrivals = _rows(run.summary["run_dir"], "ps_updates.csv")
    keys = [(r["shard"], r["worker"], r["iteration"]) for r in arrivals]
    expected = {(str(s), str(w), str(k)) for s in range(2) for w in range(3) for k in range(10)}
    assert len(keys) == 60 and set(keys) == expected
    assert len(_rows(run.summary["run_dir"], "workers.csv")) == 30


def test_r2sp_permissions_are_round_robin_and_spaced_by_the_gap(tmp_path: Path) -> None:
    # Scripted compute of 60 ms per iteration: T ~ 60 ms, gap = 0.8 T / 3 ~ 16 ms.
    cfg = _cfg(tmp_path, "r2sp", servers=1, max_iterations=8,
               scripted_compute=((0.06,) * 8,) * 3)  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    trace = _rows(run.summary["run_dir"], "permissions.csv")
    granted = {(r["worker"], r["iteration"]): r for r in trace if r["event"] == "permission"}
    delivered = [r for r in trace if r["event"] == "delivered" and int(r["iteration"]) >= 1]
    order = [int(r["worker"]) for r in delivered]
    assert order == [0, 1, 2] * 7  # iterations 1..7 in fixed round-robin order
    for prev, cur in zip(delivered, delivered[1:], strict=False):
        gap = float(granted[(cur["worker"], cur["iteration"])]["gap"])
        assert float(cur["at"]) >= float(cur["due"])  # never delivered early
        assert float(cur["at"]) - float(prev["at"]) >= gap - GAP_TOLERANCE_S
    gaps = [float(granted[(r["worker"], r["iteration"])]["gap"]) for r in delivered[3:]]
    assert min(gaps) > 0.01  # the gap is really enforced (T was measured), not 0


@pytest.mark.parametrize("scheme", ["asp", "r2sp"])
def test_a_killed_worker_is_dropped_and_the_others_finish(tmp_path: Path, scheme: str) -> None:
    cfg = _cfg(tmp_path, scheme, max_iterations=8)
    run = run_local(cfg, env={KILL_ENV: "1:3"})  # worker 1 dies after its pull of iteration 3
    assert run.summary is not None and run.summary["status"] == "ok", run
    assert run.exitcodes == [0, 0, 0, 17, 0]
    assert run.summary["iterations_per_worker"] == [8, 3, 8]
    assert list(run.summary["lost_workers"]) == ["1"]
    assert run.summary["updates_applied"] == [19, 19]  # 8 + 3 + 8 updates, each applied once


@pytest.mark.parametrize("scheme", ["asp", "bsp"])
def test_a_worker_lost_while_calibrating_is_handled_by_the_schemes_rule(
    tmp_path: Path, scheme: str
) -> None:
    """Emulated compute, ``auto`` cost: worker 1 dies once every worker is up for the
    calibration. The others calibrate without it (no wait for its cost), then ASP drops it and
    finishes; BSP ends naming it. Before, the others waited out ``timeout_s`` for its cost and
    the coordinator blamed worker 0 for not starting."""
    # A long timeout: waiting it out (the old behaviour) is then unmistakable from a loaded start.
    cfg = _cfg(tmp_path, scheme, max_iterations=4, compute_model="emulated", timeout_s=200.0,
               run_timeout_s=400.0)  # fmt: skip
    run = run_local(cfg, env={KILL_ENV: "1:calibration"})
    assert run.summary is not None, run
    assert run.exitcodes[3] == 17
    if scheme == "asp":
        assert run.summary["status"] == "ok", run.summary.get("error")
        assert run.summary["iterations_per_worker"] == [4, 0, 4]
        assert list(run.summary["lost_workers"]) == ["1"]
        assert run.summary["sample_cost_s"] is not None
    else:
        assert run.summary["status"] == "failed"
        assert "worker 1 (rank 3) lost (before its first iteration" in run.summary["error"]
    assert run.wall_s < cfg.timeout_s  # nobody waited out the timeout for its cost


def test_a_killed_worker_ends_a_bsp_run_naming_it(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "bsp", max_iterations=8)
    run = run_local(cfg, env={KILL_ENV: "1:3"})
    assert run.summary is not None and run.summary["status"] == "failed"
    assert "worker 1 (rank 3) lost" in run.summary["error"]
    assert "bsp cannot continue" in run.summary["error"]
    assert run.exitcodes == [0, 0, 0, 17, 0]  # the others left cleanly, nothing hung
    assert run.summary["elapsed_s"] < cfg.timeout_s  # ended on the failure, not a timeout


def test_a_dead_parameter_server_ends_the_run_naming_it(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "asp", max_iterations=8)
    run = run_local(cfg, env={KILL_SERVER_ENV: "1:5"})  # PS 1 dies after its 5th push
    assert run.summary is not None and run.summary["status"] == "failed"
    assert "parameter server 1 (rank 1)" in run.summary["error"]
    assert run.exitcodes[1] == 18 and run.exitcodes[0] == 0
    # PS 1's arrivals before it died were relayed to rank 0 as they happened.
    shards = {r["shard"] for r in _rows(run.summary["run_dir"], "ps_updates.csv")}
    assert shards == {"0", "1"}
    assert run.summary["elapsed_s"] < cfg.timeout_s  # ended on the failure, not a timeout


def _cli(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "fl_r2sp.cluster", "--scheme", "r2sp", "--workers", "3",
            "--servers", "1", "--model", "mlp", "--dataset", "synthetic", "--iterations", "6",
            "--batch-size", "8", "--timeout", "20", "--run-timeout", "60", "--progress", "0",
            "--no-plots", "--eval-samples", "256", "--run-dir", str(tmp_path), *extra]  # fmt: skip
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, env=full_env)


def test_the_one_command_launcher_runs_a_job_and_writes_the_run_dir(tmp_path: Path) -> None:
    proc = _cli(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert summary["status"] == "ok" and summary["pushes"] == 18
    assert 0.0 <= summary["test_accuracy"] <= 1.0
    run_dir = Path(summary["run_dir"])
    for name in ("config.json", "summary.json", "run.json", "workers.csv", "ps_updates.csv",
                 "permissions.csv", "final_params.pt", "COMPLETE"):  # fmt: skip
        assert (run_dir / name).is_file(), name


def test_the_launcher_rejects_bad_flags_before_starting_ranks(tmp_path: Path) -> None:
    proc = _cli(tmp_path, "--servers", "5000")
    assert proc.returncode == 2
    assert "exceeds the 4810 parameters" in proc.stderr
    assert not any(tmp_path.iterdir())  # no rank ever created a run directory

"""The DS-Sync runtime on CPU/gloo: equivalences with all-reduce BSP, regrouping, faults.

Jobs are tiny (mlp, 4,810 parameters, synthetic data) and run as plain processes
(``run_local``); every wait is bounded by the configured timeouts.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.data import BatchStream, make_dataset
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.models import batch_loss, build_cluster_model
from fl_r2sp.cluster.policies.dssync.regroup import DSSyncParams
from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.runtime.dssync.config import DSSyncRunConfig
from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV, worker_seed
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig

#: Float tolerance of "the same weights": the runs sum the same numbers in possibly different
#: orders (gloo's ring chunks, rack partial sums), a few float32 ulps of values of order 1.
TOL = 1e-6


def _base(tmp: Path, workers: int, iterations: int, **kw: Any) -> ClusterConfig:
    return ClusterConfig(
        workers=workers, servers=1, model="mlp", dataset="synthetic", batch_size=8, lr=0.1,
        max_iterations=iterations, timeout_s=kw.pop("timeout_s", 20.0), run_timeout_s=90.0,
        run_dir=str(tmp), eval_samples=0, progress_s=0.0, plots=False, **kw,
    )  # fmt: skip


def _ds(tmp: Path, scheme: str, racks: tuple[tuple[int, ...], ...], iterations: int = 4,
        **kw: Any) -> DSSyncRunConfig:  # fmt: skip
    n = sum(len(r) for r in racks)
    base = _base(tmp, n, iterations, timeout_s=kw.pop("timeout_s", 20.0))
    params = DSSyncParams(period=kw.pop("period", 100), ema_factor=kw.pop("ema", 0.5))
    return DSSyncRunConfig(base=base, scheme=scheme, racks=racks, params=params, **kw)


def _final(summary: dict[str, Any] | None) -> dict[str, torch.Tensor]:
    assert summary is not None and summary["status"] == "ok", summary
    return torch.load(Path(summary["run_dir"]) / "final_params.pt")


def _rows(summary: dict[str, Any]) -> list[dict[str, str]]:
    with open(Path(summary["run_dir"]) / "workers.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _reference_bsp(workers: int, iterations: int) -> torch.Tensor:
    """Every worker steps from the same model; the average of the steps is the next model."""
    model = build_cluster_model("mlp", 10, 0)
    params = [p for p in model.parameters() if p.requires_grad]
    train = make_dataset("mlp", "synthetic", None, 0, include_test=False).train
    streams = [BatchStream(train, 8, torch.Generator().manual_seed(worker_seed(0, w)))
               for w in range(workers)]  # fmt: skip
    flat = nn.utils.parameters_to_vector(params).detach().clone()
    for _ in range(iterations):
        steps = []
        for stream in streams:
            nn.utils.vector_to_parameters(flat, params)
            model.zero_grad()
            batch_loss(model, *stream.take()).backward()
            steps.append(flat - 0.1 * torch.cat([p.grad.reshape(-1) for p in params]))  # type: ignore[union-attr]
        flat = torch.stack(steps).mean(0)
    return flat


def test_dssync_with_one_group_equals_allreduce_bsp(tmp_path: Path) -> None:
    # One rack: the pattern is one group of everyone, period 1 (B = 1).
    ds = run_local(_ds(tmp_path, "dssync", ((0, 1, 2),)))
    assert ds.exitcodes == [0, 0, 0], ds
    got = _final(ds.summary)
    rows = _rows(ds.summary)  # type: ignore[arg-type]
    assert {r["group"] for r in rows} == {"0-1-2"} and len(rows) == 12
    # the all-reduce runtime's BSP on the same data streams
    bsp = ReduceRunConfig(base=_base(tmp_path, 3, 4), reduce=ReduceParams("allreduce"))
    ar = _final(run_local(bsp).summary)
    assert (got["model"] - ar["flat"]).abs().max().item() <= TOL
    assert (got["model"] - _reference_bsp(3, 4)).abs().max().item() <= TOL
    # all models are equal, so the world average of the models is the model
    assert (got["model_avg"] - got["model"]).abs().max().item() <= TOL


def test_hierarchical_equals_allreduce_bsp_and_gossip_follows_the_exponential_graph(
    tmp_path: Path,
) -> None:
    racks = ((0, 1), (2, 3))
    caps: dict[str, Any] = {"nic_mb_s": (20.0,) * 4, "uplink_mb_s": (10.0, 10.0)}  # chunked path
    hier = _final(run_local(_ds(tmp_path, "hierarchical", racks, **caps)).summary)
    ar = _final(run_local(_ds(tmp_path, "allreduce", racks, **caps)).summary)
    assert (hier["model"] - ar["model"]).abs().max().item() <= TOL
    assert (ar["model"] - _reference_bsp(4, 4)).abs().max().item() <= TOL
    gossip = run_local(_ds(tmp_path, "gossip", racks, **caps))
    _final(gossip.summary)
    # 4 workers: shifts 1, 2, 1, 2; worker i mixes with i + shift and i - shift (mod 4)
    want = {(0, 0): "0-1-3", (0, 1): "0-1-2", (1, 0): "0-2", (1, 1): "1-3", (2, 2): "1-2-3",
            (3, 3): "1-3"}  # fmt: skip
    got = {(int(r["iteration"]), int(r["worker"])): r["group"] for r in _rows(gossip.summary)}  # type: ignore[arg-type]
    assert {k: got[k] for k in want} == want


def test_a_contended_nic_is_detected_at_the_boundary(tmp_path: Path) -> None:
    # 2 + 2 racks: every inter-rack pair {rep0, rep1}; worker 1's NIC at 1/8 of the rate makes
    # each of its pairs take ~8x (ring of 2: 19.2 KB at 0.05 MB/s ~ 384 ms vs ~48 ms), far past
    # the 1.5x threshold: at 2x (0.2 MB/s) a loaded machine's scheduling delays on the other
    # ranks' pairs hid it at one boundary.
    cfg = _ds(tmp_path, "dssync", ((0, 1), (2, 3)), iterations=8, period=4,
              nic_mb_s=(0.4, 0.05, 0.4, 0.4))  # fmt: skip
    summary = run_local(cfg).summary
    _final(summary)
    with open(Path(summary["run_dir"]) / "permissions.csv", newline="") as fh:  # type: ignore[index]
        trace = list(csv.DictReader(fh))
    assert [json.loads(r["delayed"]) for r in trace] == [[1], [1]]
    assert [json.loads(r["slow_racks"]) for r in trace] == [[], []]


def test_a_killed_worker_is_dropped_at_the_boundary_and_the_others_finish(tmp_path: Path) -> None:
    cfg = _ds(tmp_path, "dssync", ((0, 1), (2, 3)), iterations=9, period=3, timeout_s=2.0,
              boundary_timeout_s=8.0)  # fmt: skip
    run = run_local(cfg, env={KILL_ENV: "3:4"})  # worker 3 dies after computing iteration 4
    s = run.summary
    assert s is not None and s["status"] == "ok", run
    assert run.exitcodes[3] == 17 and [run.exitcodes[i] for i in (0, 1, 2)] == [0, 0, 0]
    assert list(s["lost_workers"]) == ["3"] and s["lost_evidence"] == {"3": "process exit"}
    assert "worker 3 (rank 3) exited with code 17" in s["lost_workers"]["3"]
    rows = _rows(s)
    # 9 iterations of each survivor; worker 3's rows of iterations 0-2 reached rank 0 at the
    # boundary before iteration 3, the later ones died with it; the boundary before 6 drops it
    assert len(rows) == 27 + 3
    late = [r for r in rows if int(r["iteration"]) >= 6]
    assert late and all("3" not in r["group"].split("-") and r["ok"] == "True" for r in late)
    assert s["failed_syncs"] >= 1

"""OSP on the real PS runtime (CPU/gloo, every rank a process; tiny MLP, synthetic data).

Equivalences: all layers in RS = BSP on the same runtime; a mixed or all-ICS split = the NumPy
reference of OSP's update rules (:mod:`fl_r2sp.cluster.policies.osp.reference`) fed the GIBs the
runtime's PS chose; OSP-C = OSP-S in the weights; a killed worker ends the run, naming it."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.data import BatchStream, make_dataset
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.models import batch_loss, build_cluster_model
from fl_r2sp.cluster.policies.osp.params import OSPParams
from fl_r2sp.cluster.policies.osp.reference import run_osp_reference
from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV, worker_seed
from fl_r2sp.cluster.schemes import scheme_params

#: float32 runtime against the float64 reference over 6 iterations.
REF_TOL = 2e-5


def _cfg(tmp_path: Path, scheme: str, **kw: Any) -> ClusterConfig:
    knobs = {f.name for f in dataclasses.fields(OSPParams)}
    osp = {k: kw.pop(k) for k in list(kw) if k in knobs}
    base: dict[str, Any] = dict(
        workers=3,
        servers=2,
        scheme=scheme_params(scheme, **osp),
        model="mlp",
        dataset="synthetic",
        batch_size=8,
        lr=0.1,
        max_iterations=6,
        timeout_s=20.0,
        run_timeout_s=60.0,
        run_dir=str(tmp_path),
        eval_samples=0,
        progress_s=0.0,
        plots=False,
    )
    base.update(kw)
    return ClusterConfig(**base)


def _final(summary: dict[str, Any]) -> torch.Tensor:
    return torch.load(Path(summary["run_dir"]) / "final_params.pt")["flat"]


def _ok(cfg: ClusterConfig) -> dict[str, Any]:
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    assert run.exitcodes == [0] * cfg.world_size
    return run.summary


def test_all_routine_osp_equals_bsp_on_the_runtime(tmp_path: Path) -> None:
    bsp = _ok(_cfg(tmp_path, "bsp"))
    osp = _ok(_cfg(tmp_path, "osp", budget="fixed", fixed_mb=0.0))
    assert all(r["ics_layers"] == [] for r in osp["osp"]["gib"])
    diff = (_final(bsp) - _final(osp)).abs().max().item()
    assert diff <= 1e-6, diff  # same sums in the same order: equal up to float32 rounding
    assert osp["updates_applied"] == bsp["updates_applied"] == [18, 18]


def _reference(cfg: ClusterConfig, gibs: list[list[int]], lgp: bool) -> tuple[Any, dict]:
    """OSP's reference on the runtime's batches and GIBs: (final PS model, losses[(w, j)])."""
    model = build_cluster_model(cfg.model, 10, cfg.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    train = make_dataset(cfg.model, cfg.dataset, None, cfg.seed, include_test=False).train
    streams = [
        BatchStream(train, cfg.batch_size, torch.Generator().manual_seed(worker_seed(cfg.seed, w)))
        for w in range(cfg.workers)
    ]
    losses: dict[tuple[int, int], float] = {}

    def grad(w: int, j: int, layers: list[np.ndarray]) -> list[np.ndarray]:
        for p, v in zip(params, layers, strict=True):
            p.data = torch.from_numpy(v.astype(np.float32))
        model.zero_grad()
        loss = batch_loss(model, *streams[w].take())
        loss.backward()
        losses[(w, j)] = float(loss.detach())
        return [p.grad.detach().double().numpy() for p in params]  # type: ignore[union-attr]

    def bitmap_of(j: int) -> np.ndarray:
        out = np.zeros(len(params), dtype=bool)
        out[gibs[j]] = True
        return out

    start = [p.detach().double().numpy().copy() for p in params]
    _, ps = run_osp_reference(grad, cfg.workers, start, cfg.lr, cfg.max_iterations, bitmap_of, lgp)
    return np.concatenate([p.reshape(-1) for p in ps]), losses


@pytest.mark.parametrize(
    ("budget_mb", "cap", "lgp"),
    [(0.003, 0.8, True), (1.0, 1.0, True), (0.003, 0.8, False)],
    ids=["mixed-lgp", "all-ics-lgp", "mixed-no-lgp"],
)
def test_osp_on_the_runtime_matches_the_reference(
    tmp_path: Path, budget_mb: float, cap: float, lgp: bool
) -> None:
    # mlp layers: 16384, 256, 2560, 40 bytes. 3 kB fits the three small layers; 1 MB with a
    # cap of 1.0 puts every layer in ICS from iteration 0.
    cfg = _cfg(tmp_path, "osp", budget="fixed", fixed_mb=budget_mb, cap=cap, lgp=lgp)
    summary = _ok(cfg)
    gibs = [r["ics_layers"] for r in summary["osp"]["gib"]]
    assert len(gibs) == cfg.max_iterations
    if cap == 1.0:
        assert all(g == [0, 1, 2, 3] for g in gibs)
    else:  # the split really mixes RS and ICS layers
        assert any(0 < len(g) < 4 for g in gibs)
    want, losses = _reference(cfg, gibs, lgp)
    got = _final(summary).double().numpy()
    assert np.abs(got - want).max() <= REF_TOL
    # The loss each worker reported was computed on the parameters the reference's worker used
    # in that iteration: LGP's prediction and every Eq. 7 correction happened as specified.
    with open(Path(summary["run_dir"]) / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == cfg.workers * cfg.max_iterations
    for r in rows:
        key = (int(r["worker"]), int(r["iteration"]))
        assert abs(float(r["loss"]) - losses[key]) <= REF_TOL, key


def test_osp_c_colocated_equals_osp_s(tmp_path: Path) -> None:
    kw: dict[str, Any] = {"budget": "fixed", "fixed_mb": 0.003}
    s = _ok(_cfg(tmp_path, "osp-s", **kw))
    c_cfg = _cfg(tmp_path, "osp-c", **kw)
    assert c_cfg.world_size == 3  # shards 0 and 1 live in workers 0's and 1's processes
    c = _ok(c_cfg)
    assert [r["ics_layers"] for r in c["osp"]["gib"]] == [r["ics_layers"] for r in s["osp"]["gib"]]
    assert (_final(s) - _final(c)).abs().max().item() <= 1e-6


def test_a_killed_worker_ends_an_osp_run_naming_it(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "osp", max_iterations=8, budget="fixed", fixed_mb=0.003)
    run = run_local(cfg, env={KILL_ENV: "1:3"})  # worker 1 dies at the start of iteration 3
    assert run.summary is not None and run.summary["status"] == "failed"
    assert "worker 1 (rank 3) lost" in run.summary["error"]
    assert run.exitcodes == [0, 0, 0, 17, 0]  # the others left cleanly, nothing hung
    assert run.summary["elapsed_s"] < cfg.timeout_s  # ended on the failure, not a timeout


def test_osp_rejects_momentum_before_starting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="OSP needs momentum 0"):
        _cfg(tmp_path, "osp", momentum=0.9).validate()
    with pytest.raises(ValueError, match="osp-c co-locates"):
        _cfg(tmp_path, "osp-c", workers=1, servers=2).validate()


def test_final_model_of_an_osp_run_equals_the_workers(tmp_path: Path) -> None:
    # The evaluating worker's own copy (after draining ICS) scores the same as the PS model.
    cfg = _cfg(tmp_path, "osp", budget="fixed", fixed_mb=0.003, eval_samples=256)
    summary = _ok(cfg)
    model = build_cluster_model("mlp", 10, cfg.seed)
    nn.utils.vector_to_parameters(_final(summary), list(model.parameters()))
    test = make_dataset("mlp", "synthetic", None, cfg.seed).test
    assert test is not None
    from fl_r2sp.cluster.userjob.builtin import evaluate_on_test_split

    ps = evaluate_on_test_split(model, test.x, test.y, 256, torch.device("cpu"), cfg.seed)
    assert summary["test_accuracy"] == pytest.approx(ps["test_accuracy"], abs=1e-9)
    assert summary["test_loss"] == pytest.approx(ps["test_loss"], abs=1e-5)


def test_osp_flags_reach_the_scheme_knobs() -> None:
    from fl_r2sp.cluster.cli import parse

    cfg, _ = parse(["--scheme", "osp-c", "--workers", "3", "--servers", "2", "--model", "mlp",
                    "--dataset", "synthetic", "--osp-no-lgp", "--osp-selection", "topk",
                    "--osp-budget", "fixed", "--osp-fixed-mb", "0.5", "--osp-cap", "0.6",
                    "--osp-epoch-iterations", "7"])  # fmt: skip
    sp = cfg.scheme  # type: ignore[attr-defined]
    assert (sp.scheme, sp.lgp, sp.selection, sp.budget) == (
        "osp-c", False, "topk", "fixed")  # fmt: skip
    assert (sp.fixed_mb, sp.cap, sp.epoch_iterations) == (0.5, 0.6, 7)
    assert cfg.world_size == 3

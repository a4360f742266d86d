"""Entry of one rank of an all-reduce-family run (the rank entry dispatches here).

Every rank is a worker (:mod:`.worker`); rank 0 also runs the controller thread
(:mod:`.controller`) and writes the run directory: ``config.json``, ``workers.csv``
(one row per worker round: ``compute_s``, ``blocking_s`` = wait in the ready queue,
``push_s`` = the reduce, ``build_s``, ``group``, ``group_size``, ``loss``; the phases run
compute, wait, reduce), ``permissions.csv`` (the controller's decision trace: launches, and
selective reduce's waits and holds), ``controller_inputs.json`` (every call the controller
got, for :func:`~fl_r2sp.cluster.policies.reduce.recorder.replay_inputs`), ``run.json``,
``summary.json``, ``final_params.pt`` (worker 0's parameters), ``COMPLETE`` and, unless
disabled, ``gantt.png`` (the worker phases: compute, queue wait, reduce).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, cast

import torch

from fl_r2sp.cluster.policies.reduce import ReduceController, make_reduce_controller
from fl_r2sp.cluster.policies.reduce.recorder import RecordingController
from fl_r2sp.cluster.runtime.common.context import new_store
from fl_r2sp.cluster.runtime.common.job import leave
from fl_r2sp.cluster.runtime.peer.rank import initial_flat, open_run, run_peer_rank
from fl_r2sp.cluster.runtime.ps.leader import strict_json
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig
from fl_r2sp.cluster.runtime.reduce.controller import ReduceCoordinator
from fl_r2sp.cluster.runtime.reduce.worker import ReduceWorker
from fl_r2sp.cluster.telemetry import ClusterRunWriter, iterations_per_worker, plots_or_warn
from fl_r2sp.cluster.userjob.job import buffers_of


def run_reduce_rank(
    config: object,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
) -> dict[str, Any] | None:
    """Run one rank; rank 0 returns the run summary, the others None.

    Parameters as :func:`fl_r2sp.cluster.rank.run_rank`; ``config`` is a
    :class:`ReduceRunConfig` or its :meth:`~ReduceRunConfig.to_dict` (``WORLD_SIZE`` must
    equal the number of workers).

    Raises
    ------
    TypeError
        If ``config`` is neither.
    """
    return run_peer_rank(config, ReduceRunConfig, _play, init_method, rank, world_size, local_rank)


def _play(cfg: ReduceRunConfig, rank: int, local_rank: int) -> dict[str, Any] | None:
    base = cfg.base
    flat = initial_flat(base)
    store = new_store()
    info = open_run(store, base, cfg.reduce.scheme, rank)
    worker = ReduceWorker(cfg, rank, local_rank, flat, store)
    if rank != 0:
        worker.run()
        leave(store, rank, cfg.world_size, set())
        return None
    summary = _lead(cfg, worker, float(info["epoch"]), Path(info["run_dir"]), flat.numel())
    gone = {int(w) for w in summary.get("lost_workers", {})}
    leave(store, rank, cfg.world_size, gone)
    return summary


def _lead(cfg: ReduceRunConfig, worker: ReduceWorker, epoch: float, run_dir: Path,
          num_params: int) -> dict[str, Any]:  # fmt: skip
    """Rank 0: run the controller thread beside this rank's worker; write the run directory."""
    base = cfg.base
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
    writer = ClusterRunWriter(run_dir, config=cfg.to_dict())
    ctl = make_reduce_controller(cfg.reduce, cfg.bandwidth_prior(), 4.0 * num_params, cfg.alpha_s)
    rec = RecordingController(ctl)
    # The recorder forwards every attribute to ctl: it stands in for the controller.
    coord = ReduceCoordinator(cfg, cast(ReduceController, rec), epoch, 4.0 * num_params, writer)
    box: dict[str, Any] = {}

    def control() -> None:
        try:
            box["stats"] = coord.run()
        except Exception as exc:  # reported in the summary; the workers time out and leave
            box["error"] = f"controller failed: {type(exc).__name__}: {exc}"

    thread = threading.Thread(target=control, name="reduce-controller", daemon=True)
    thread.start()
    worker.run()
    thread.join(base.run_timeout_s)
    stats = box.get("stats", {})
    error = box.get("error") or stats.get("error")
    if thread.is_alive():
        error = error or "the controller did not finish"
    coord.record_trace()  # what a failed controller thread decided last
    (run_dir / "controller_inputs.json").write_text(json.dumps(rec.inputs) + "\n")
    elapsed = max(float(stats.get("ended_at", 0.0)) - float(stats.get("started_at", 0.0)), 1e-9)
    summary = {
        "status": ("timeout" if stats.get("stop_reason") == "timeout" else
                   "failed" if error else "ok"),
        "error": error, "scheme": cfg.reduce.scheme,
        "reason": error or stats.get("stop_reason"),
        "workers": base.workers, "model": base.model, "dataset": base.dataset,
        "parameters": num_params, "elapsed_s": elapsed, "link_caps_mb_s": list(cfg.link_caps()),
        "t_started": stats.get("started_at"),  # telemetry clock (s since the epoch) at the start
        "iterations_per_worker": iterations_per_worker(writer.workers, base.workers),
        **{k: v for k, v in stats.items() if k not in ("started_at", "ended_at", "error")},
        "run_dir": str(run_dir),
    }  # fmt: skip
    torch.save(
        {
            "flat": worker.flat.clone(),
            "model": base.model,
            "state_dict": worker.job.state_dict(worker.flat, buffers_of(worker.model)),
        },
        run_dir / "final_params.pt",
    )
    (run_dir / "summary.json").write_text(json.dumps(strict_json(summary), indent=2) + "\n")
    writer.close(summary)  # writes COMPLETE last: a folder without it is incomplete
    if base.plots:
        plots_or_warn(run_dir)
    return summary

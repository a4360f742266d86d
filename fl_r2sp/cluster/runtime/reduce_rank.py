"""Entry of one rank of an all-reduce-family run (the rank entry dispatches here).

Every rank is a worker (:mod:`.reduce_worker`); rank 0 also runs the controller thread
(:mod:`.reduce_controller`) and writes the run directory: ``config.json``, ``workers.csv``
(one row per worker round: ``compute_s``, ``blocking_s`` = wait in the ready queue,
``push_s`` = the reduce, ``build_s``, ``group``, ``group_size``, ``loss``; the phases run
compute, wait, reduce), ``permissions.csv`` (the controller's decision trace: launches, and
selective reduce's waits and holds), ``controller_inputs.json`` (every call the controller
got, for :func:`~fl_r2sp.cluster.policies.reduce.recorder.replay_inputs`), ``run.json``,
``summary.json``, ``final_params.pt`` (worker 0's parameters) and ``COMPLETE``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn

from fl_r2sp.cluster.config import num_classes_of
from fl_r2sp.cluster.models import build_model
from fl_r2sp.cluster.policies.reduce import ReduceController, make_reduce_controller
from fl_r2sp.cluster.policies.reduce.recorder import RecordingController
from fl_r2sp.cluster.runtime import protocol as P
from fl_r2sp.cluster.runtime.context import new_store, set_json, wait_get
from fl_r2sp.cluster.runtime.reduce_config import ReduceRunConfig
from fl_r2sp.cluster.runtime.reduce_controller import ReduceCoordinator
from fl_r2sp.cluster.runtime.reduce_worker import ReduceWorker
from fl_r2sp.cluster.telemetry import ClusterRunWriter

EXIT_WAIT_S = 10.0


def run_reduce_rank(
    config: object,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
) -> dict[str, Any] | None:
    """Run one rank; rank 0 returns the run summary, the others None.

    Parameters as :func:`fl_r2sp.cluster.runtime.rank.run_rank`; ``config`` is a
    :class:`ReduceRunConfig` or its :meth:`~ReduceRunConfig.to_dict` (``WORLD_SIZE`` must
    equal the number of workers).

    Raises
    ------
    TypeError
        If ``config`` is neither.
    """
    from fl_r2sp.cluster.runtime.rank import _env_int, _watchdog

    if isinstance(config, dict):
        config = ReduceRunConfig.from_dict(config)
    if not isinstance(config, ReduceRunConfig):
        raise TypeError(f"expected a ReduceRunConfig or its dict, got {type(config).__name__}")
    cfg = config
    cfg.validate(check_model=False)
    rank = _env_int("RANK", rank)
    world_size = _env_int("WORLD_SIZE", world_size)
    local_rank = local_rank if local_rank is not None else int(os.environ.get("LOCAL_RANK", 0))
    if world_size != cfg.world_size:
        raise ValueError(f"WORLD_SIZE={world_size} but the run has {cfg.world_size} workers")
    base = cfg.base
    torch.set_num_threads(base.threads)
    timer = _watchdog(rank, base.run_timeout_s + 60.0)
    dist.init_process_group("gloo", init_method=init_method or "env://", rank=rank,
                            world_size=world_size,
                            timeout=datetime.timedelta(seconds=base.timeout_s))  # fmt: skip
    try:
        return _play(cfg, rank, local_rank)
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):  # a peer may already be gone
            dist.destroy_process_group()


def _play(cfg: ReduceRunConfig, rank: int, local_rank: int) -> dict[str, Any] | None:
    base = cfg.base
    model = build_model(base.model, num_classes_of(base.dataset), base.seed)
    flat = nn.utils.parameters_to_vector(
        [p for p in model.parameters() if p.requires_grad]).detach().clone()  # fmt: skip
    store = new_store()
    summary: dict[str, Any] | None = None
    if rank == 0:
        from fl_r2sp.cluster.runtime.leader import make_run_dir

        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = f"{cfg.reduce.scheme}-{base.model}-{base.dataset}-w{base.workers}-seed{base.seed}"
        run_dir = make_run_dir(base.run_dir, f"{name}-{stamp}")
        info: dict[str, Any] = {"epoch": time.time(), "run_dir": str(run_dir)}
        set_json(store, P.EPOCH_KEY, info)
    else:
        info = wait_get(store, P.EPOCH_KEY, base.timeout_s, delete=False)
    worker = ReduceWorker(cfg, rank, local_rank, flat, store)
    if rank != 0:
        worker.run()
        _leave(store, rank, cfg.world_size, set())
        return None
    summary = _lead(cfg, worker, float(info["epoch"]), Path(info["run_dir"]), flat.numel())
    gone = {int(w) for w in summary.get("lost_workers", {})}
    _leave(store, rank, cfg.world_size, gone)
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
    writer.trace_rows(ctl.trace)
    (run_dir / "controller_inputs.json").write_text(json.dumps(rec.inputs) + "\n")
    elapsed = max(float(stats.get("ended_at", 0.0)) - float(stats.get("started_at", 0.0)), 1e-9)
    summary = {
        "status": "failed" if error else "ok", "error": error, "scheme": cfg.reduce.scheme,
        "workers": base.workers, "model": base.model, "dataset": base.dataset,
        "parameters": num_params, "elapsed_s": elapsed, "link_caps_mb_s": list(cfg.link_caps()),
        "t_started": stats.get("started_at"),  # telemetry clock (s since the epoch) at the start
        **{k: v for k, v in stats.items() if k not in ("started_at", "ended_at", "error")},
        "run_dir": str(run_dir),
    }  # fmt: skip
    torch.save({"flat": worker.flat.clone(), "model": base.model}, run_dir / "final_params.pt")
    (run_dir / "summary.json").write_text(json.dumps(_clean(summary), indent=2) + "\n")
    writer.close(summary)  # writes COMPLETE last: a folder without it is incomplete
    return summary


def _leave(store: dist.Store, rank: int, world: int, gone: set[int]) -> None:
    """Mark this rank as leaving; rank 0 (which hosts the store) waits for the live others."""
    try:
        store.set(P.exit_key(rank), "1")
        if rank == 0:
            keys = [P.exit_key(r) for r in range(1, world) if r not in gone]
            store.wait(keys, datetime.timedelta(seconds=EXIT_WAIT_S))
    except Exception:  # a lost rank never sets its key; leaving anyway is the point
        pass


def _clean(value: Any) -> Any:
    from fl_r2sp.cluster.runtime.leader import _clean as clean

    return clean(value)

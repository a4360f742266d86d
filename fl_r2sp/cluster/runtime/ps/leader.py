"""Rank 0: parameter server 0, the coordinator, and the run directory.

Rank 0 serves shard 0 with its per-worker threads and runs the coordinator in its main thread.
When the coordinator is done it waits for its own threads (each ends on the worker's BYE),
collects the other shards (final parameters over gloo, statistics and update arrival times
through the store), the evaluating worker's test result, and writes the run directory:

* ``config.json`` (at the start), ``workers.csv``, ``ps_updates.csv``, ``permissions.csv``
  (policy trace plus the actual delivery time of every permission), ``run.json`` and
  ``COMPLETE`` (:class:`~fl_r2sp.cluster.telemetry.ClusterRunWriter`), ``summary.json``,
  ``final_params.pt`` (the flattened parameters and shard bounds) and, unless disabled,
  ``gantt.png`` / ``gaps.png``.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.policies.common.base import ApplyMode, CoordinatorPolicy
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, set_json, wait_get
from fl_r2sp.cluster.runtime.ps import compute_model
from fl_r2sp.cluster.runtime.ps.arrival_relay import ArrivalReceiver, ArrivalSender
from fl_r2sp.cluster.runtime.ps.coordinator import Coordinator, CoordinatorResult
from fl_r2sp.cluster.runtime.ps.server import ParameterServer
from fl_r2sp.cluster.telemetry import ClusterRunWriter, plots_or_warn
from fl_r2sp.cluster.userjob.job import TrainingJob, decode_buffers


def run_leader(
    ctx: RankContext, policy: CoordinatorPolicy, init_flat: torch.Tensor,
    make_server: Callable[[RankContext, torch.Tensor, Any], Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Serve shard 0, coordinate, gather and write the run directory; return the summary.

    ``make_server(ctx, init_flat, on_lost)`` builds another shard server than
    :class:`ParameterServer` (OSP's, :mod:`..osp.rank`); it needs ``state`` (with ``snapshot``,
    ``wait_push``, ``lose``, ``abort``), ``start``, ``join``, ``report`` and may add
    ``summary_extra()`` entries to the summary.
    """
    cfg = ctx.cfg
    run_dir = Path(ctx.run_dir)
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
    # permissions.csv in time order: a held permission is decided before earlier deliveries.
    writer = ClusterRunWriter(run_dir, config=cfg.to_dict(), trace_order="at")
    coord: Coordinator | None = None

    def lost(w: int, reason: str) -> None:
        if coord is not None:
            coord.notify_lost(w, reason)

    ps = (make_server(ctx, init_flat, lost) if make_server is not None else
          ParameterServer(ctx, init_flat, policy.apply_mode, on_lost=lost,
                          admission=policy.admission))  # fmt: skip
    coord = Coordinator(ctx, policy, ps.state, writer)
    ps.on_arrival = lambda w, k, t: writer.ps_row(0, w, k, t)  # shard 0's arrivals, live
    relay = ArrivalReceiver(cfg.servers, writer.ps_row).start()  # the other shards', live too
    ps.start()
    result = coord.run()
    ps.join()
    errors = [result.error] if result.error else []
    flat, reports, lost_servers = _gather(ctx, ps, errors)
    evaluation = _evaluation(ctx, result, errors)
    buffers = decode_buffers(evaluation.pop("buffers", None))  # the evaluator's BatchNorm stats
    relay.finish(reports)
    summary = _summary(ctx, result, writer.workers, reports, evaluation, errors)
    summary["lost_servers"] = lost_servers
    if cfg.compute_model == "emulated":
        summary.update(compute_model.emulation_summary(writer.workers))
        warning = compute_model.overrun_warning(summary["overrun_share"])
        if warning is not None:
            print(f"[cluster] warning: {warning}", file=sys.stderr, flush=True)
    summary.update(getattr(ps, "summary_extra", dict)())
    writer.close(summary)
    if flat is not None:
        torch.save({"flat": flat, "bounds": ctx.bounds, "model": cfg.model,
                    "state_dict": TrainingJob(cfg).state_dict(flat, buffers)},
                   run_dir / "final_params.pt")  # fmt: skip
    (run_dir / "summary.json").write_text(json.dumps(strict_json(summary), indent=2) + "\n")
    if cfg.plots:
        plots_or_warn(run_dir)
    return summary


def _gather(
    ctx: RankContext, ps: ParameterServer, errors: list[str]
) -> tuple[torch.Tensor | None, list[dict[str, Any]], list[int]]:
    """Final parameters of every shard, their statistics (shard 0's own included) and the
    servers that could not deliver them (lost)."""
    flat = torch.zeros(ctx.num_params)
    a, b = ctx.bounds[0]
    flat[a:b] = ps.state.snapshot()
    reports = [ps.report()]
    store = new_store()
    lost: list[int] = []
    for s in range(1, ctx.cfg.servers):
        a, b = ctx.bounds[s]
        try:
            buf = torch.zeros(b - a)
            dist.recv(buf, src=s, tag=P.TAG_FINAL)
            flat[a:b] = buf
            reports.append(wait_get(store, P.ps_report_key(s), ctx.cfg.timeout_s))
        except Exception as exc:
            lost.append(s)
            errors.append(f"{ctx.describe(s)} lost: {str(exc).splitlines()[0][:200]}")
    return (None if lost else flat), reports, lost


def _evaluation(ctx: RankContext, result: CoordinatorResult, errors: list[str]) -> dict[str, Any]:
    if result.evaluator is None or result.evaluator in result.lost:
        return {}
    try:
        return wait_get(new_store(), P.EVAL_KEY, ctx.cfg.timeout_s)
    except Exception as exc:
        errors.append(f"no test evaluation from worker {result.evaluator}: {exc}")
        return {}


def _summary(ctx: RankContext, result: CoordinatorResult, rows: list[dict[str, Any]],
             reports: list[dict[str, Any]], evaluation: dict[str, Any],
             errors: list[str]) -> dict[str, Any]:  # fmt: skip
    cfg = ctx.cfg
    elapsed = max(result.ended_at - result.started_at, 1e-9)
    spans = [float(r["t_end"]) - float(r["t_start"]) for r in rows]
    per_worker = [0] * cfg.workers
    for r in rows:
        per_worker[int(r["worker"])] += 1
    applied = [int(r["updates_applied"]) for r in sorted(reports, key=lambda r: r["shard"])]
    timed_out = result.stop_reason == "timeout"
    return {
        "status": "timeout" if timed_out else "failed" if errors else "ok",
        "error": "; ".join(errors) if errors else None,
        "scheme": cfg.scheme.scheme, "workers": cfg.workers, "servers": cfg.servers,
        "model": cfg.model, "dataset": cfg.dataset, "parameters": ctx.num_params,
        "stop_reason": result.stop_reason, "elapsed_s": elapsed,
        "reason": "; ".join(errors) if errors else result.stop_reason,
        "pushes": result.pushes, "iterations_per_worker": per_worker,
        "pushes_per_s": result.pushes / elapsed,
        "iterations_per_s": result.pushes / elapsed / cfg.workers,
        "mean_iteration_s": statistics.fmean(spans) if spans else None,
        "time_to_threshold_s": (None if result.converged_at is None
                                else result.converged_at - result.started_at),
        "final_loss": result.final_loss,
        "test_accuracy": evaluation.get("test_accuracy"),
        "test_loss": evaluation.get("test_loss"),
        "evaluation": {k: v for k, v in evaluation.items() if k != "worker"},
        "updates_applied": applied,
        # Per shard, the (worker, iteration) pushes an admission verdict dropped (SAFA).
        "discarded_updates": [sorted(map(list, r.get("discarded", []))) for r in
                              sorted(reports, key=lambda r: r["shard"])],  # fmt: skip
        "max_staleness": max((int(r["max_staleness"]) for r in reports), default=0),
        "lost_workers": {str(w): why for w, why in result.lost.items()},
        "lost_evidence": {str(w): ev for w, ev in result.evidence.items()},
        "lost_at": {str(w): at for w, at in result.lost_at.items()},
        "run_dir": ctx.run_dir,
    }  # fmt: skip


def strict_json(value: Any) -> Any:
    """NaN/inf to None for strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


def run_other_server(ctx: RankContext, init_flat: torch.Tensor, apply_mode: ApplyMode,
                     admission: bool = False) -> None:  # fmt: skip
    """A parameter server of rank > 0: serve, then hand shard and statistics to rank 0
    (``admission``: hold pushes for the coordinator's verdict, as the policy says)."""
    ps = ParameterServer(ctx, init_flat, apply_mode, admission=admission)
    ps.on_arrival = ArrivalSender(ctx.rank).send
    ps.start()
    ps.join()
    set_json(new_store(), P.ps_report_key(ctx.rank), ps.report())
    dist.send(ps.state.snapshot(), dst=0, tag=P.TAG_FINAL)

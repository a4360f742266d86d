"""Entry of one rank of a DS-Sync-family run (the rank entry dispatches here).

Every rank is a worker (:mod:`.worker`); rank 0 also decides the plan at every period
boundary (:func:`~.plan.decide`) and writes the run directory: ``config.json``,
``workers.csv`` (one row per worker iteration: ``compute_s``, ``push_s`` = the
synchronisation, ``group``, ``group_size``, ``sent_bytes``, ``ok``, ``loss``),
``permissions.csv`` (one row per boundary: live workers, generation, bottlenecks found),
``run.json``, ``summary.json``, ``final_params.pt`` (``flat``: the world average of the EMA
copies, the run's model; ``model_avg``: the world average of the models; ``model``: worker 0's
own parameters), ``COMPLETE`` and, unless disabled, ``gantt.png`` (compute, then the
synchronisation, per worker).
"""

from __future__ import annotations

import datetime
import json
import math
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import torch

from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common.context import new_store, set_json, wait_get
from fl_r2sp.cluster.runtime.common.job import leave, timeout_reason
from fl_r2sp.cluster.runtime.common.losses import EXIT, LOOK_S, TIMEOUT, ExitBoard, reason_of
from fl_r2sp.cluster.runtime.dssync.config import DSSyncRunConfig
from fl_r2sp.cluster.runtime.dssync.plan import Plan, View, decide
from fl_r2sp.cluster.runtime.dssync.worker import (
    GO_KEY,
    STOP_KEY,
    DSSyncWorker,
    exchange_boundary,
    final_key,
    plan_key,
    report_key,
    up_key,
)
from fl_r2sp.cluster.runtime.peer.rank import initial_flat, open_run, run_peer_rank
from fl_r2sp.cluster.telemetry import ClusterRunWriter, iterations_per_worker, plots_or_warn
from fl_r2sp.cluster.userjob.job import TrainingJob, buffers_of


def run_dssync_rank(
    config: object,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
) -> dict[str, Any] | None:
    """Run one rank; rank 0 returns the run summary, the others None.

    Parameters as :func:`fl_r2sp.cluster.rank.run_rank`; ``config`` is a
    :class:`DSSyncRunConfig` or its :meth:`~DSSyncRunConfig.to_dict` (``WORLD_SIZE`` must equal
    the number of workers).

    Raises
    ------
    TypeError
        If ``config`` is neither.
    """
    return run_peer_rank(config, DSSyncRunConfig, _play, init_method, rank, world_size, local_rank)


def _play(cfg: DSSyncRunConfig, rank: int, local_rank: int) -> dict[str, Any] | None:
    base = cfg.base
    flat = initial_flat(base)
    store = new_store()
    # The tag names the run's shared-uplink store keys; only rank 0's is published.
    info = open_run(store, base, cfg.scheme, rank, {"tag": uuid.uuid4().hex[:12]})
    worker = DSSyncWorker(cfg, rank, local_rank, flat, store, float(info["epoch"]), info["tag"])
    set_json(store, up_key(rank), {})
    if rank != 0:
        wait_get(store, GO_KEY, base.timeout_s, delete=False)
        wait_s = cfg.boundary_wait_s + base.timeout_s
        try:
            if worker.run(lambda b, rep: exchange_boundary(store, rank, b, rep, wait_s)):
                worker.final_average()
        except Exception as exc:  # rank 0 went silent or the final average failed: leave
            print(f"[worker {rank}] stopped: {type(exc).__name__}: {exc}", flush=True)
        leave(store, rank, cfg.world_size, set())
        return None
    lead = Lead(cfg, store, Path(info["run_dir"]), flat.numel())
    summary = lead.run(worker)
    leave(store, rank, cfg.world_size, set(range(cfg.world_size)) - set(worker.plan.live))
    return summary


class Lead:
    """Rank 0's extra duties: start, boundary decisions, rows, the run directory."""

    def __init__(self, cfg: DSSyncRunConfig, store: Any, run_dir: Path, num_params: int) -> None:
        self.cfg, self.store, self.run_dir, self.num_params = cfg, store, run_dir, num_params
        self.plan = Plan(tuple(range(cfg.world_size)))
        self.t0 = 0.0
        n = cfg.world_size
        self.board = ExitBoard(store, lambda r: names.rank_name(r, n, n))
        self.lost: dict[int, str] = {}  # worker -> why it was dropped
        self.clock: _StopTimer | None = None
        self.timed_out: str | None = None
        self.evidence: dict[int, str] = {}  # worker -> how its loss was known
        self.lost_at: dict[int, float] = {}  # worker -> time.time() it was dropped
        # Rows reach workers.csv at each boundary, so a run that fails keeps them.
        self.writer = ClusterRunWriter(run_dir, config=cfg.to_dict())

    def run(self, worker: DSSyncWorker) -> dict[str, Any]:
        """Start the workers, train, average, evaluate, write the run directory."""
        base, error = self.cfg.base, None
        (self.run_dir / "config.json").write_text(json.dumps(self.cfg.to_dict(), indent=2) + "\n")
        final: tuple[torch.Tensor, torch.Tensor] | None = None
        try:
            self.store.wait([up_key(w) for w in range(self.cfg.world_size)],
                            datetime.timedelta(seconds=base.timeout_s))  # fmt: skip
            self.t0 = worker.now()
            set_json(self.store, GO_KEY, {})
            self.clock = _stop_at(base.run_timeout_s)
            trained = worker.run(self.boundary)
            self.clock.cancel()
            if self.clock.fired.is_set():  # training ended at the time limit
                self.timed_out = timeout_reason(base.run_timeout_s)
            if trained:
                final = worker.final_average()
        except Exception as exc:  # reported in the summary
            error = f"{type(exc).__name__}: {exc}"
        finally:
            if self.clock is not None:
                self.clock.cancel()
        elapsed = worker.now() - self.t0
        return self._close(worker, final, elapsed, error)

    def collect(self, b: int, report: dict[str, Any]) -> dict[int, dict[str, Any]]:
        """The live workers' reports at boundary ``b``: each until it arrives, its worker is
        known to be gone (then lost at once, with the evidence), or the boundary timeout
        passes (lost, evidence "timeout": it may hang without dying)."""
        reports, wait_s = {0: report}, self.cfg.boundary_wait_s
        waiting = [w for w in self.plan.live if w != 0]
        deadline = time.monotonic() + wait_s
        while waiting:
            for w in list(waiting):
                if self.store.check([report_key(b, w)]):
                    reports[w] = wait_get(self.store, report_key(b, w), 1.0)
                    waiting.remove(w)
                elif (seen := self.board.gone([w])) and not self.store.check([report_key(b, w)]):
                    # (a report set just before it died is read on the next pass)
                    self._lose(w, reason_of(seen[w]), str(seen[w].get("evidence", EXIT)))
                    waiting.remove(w)
            if waiting and time.monotonic() > deadline:
                for w in waiting:
                    self._lose(w, f"no report at boundary {b} within {wait_s:.0f}s", TIMEOUT)
                break
            if waiting:
                time.sleep(LOOK_S / 5)
        return reports

    def _lose(self, w: int, why: str, evidence: str) -> None:
        self.lost[w], self.evidence[w], self.lost_at[w] = why, evidence, time.time()
        print(f"[lead] lost {names.rank_name(w, self.cfg.world_size, self.cfg.world_size)}: "
              f"{why}", flush=True)  # fmt: skip

    def boundary(self, b: int, report: dict[str, Any]) -> Plan:
        """Collect the live workers' reports (:meth:`collect`), decide, publish the next plan."""
        reports = self.collect(b, report)
        rows = sorted((r for rep in reports.values() for r in rep.get("rows", [])),
                      key=lambda r: (r["t_start"], r["worker"]))  # fmt: skip
        for row in rows:
            self.writer.worker_row(**row)
        lost = sorted(set(self.plan.live) - set(reports))
        params, scheme = self.cfg.params, self.cfg.scheme
        plan = decide(reports, self.cfg.rack_map(), self.plan, scheme, params, self.cfg.regroup)
        view = View(plan, self.cfg.rack_map(), scheme)
        self.writer.trace_rows([{  # permissions.csv, streamed
            "event": "boundary", "at": reports[0].get("t", -1), "boundary": b,
            "live": json.dumps(list(plan.live)), "lost": json.dumps(lost),
            "generation": plan.generation,
            "slow_racks": json.dumps(list(plan.bottlenecks.slow_racks)),
            "delayed": json.dumps([plan.live[d] for d in plan.bottlenecks.delayed]),
            "failed_syncs": sum(int(r.get("failed", 0)) for r in reports.values()),
            "period": view.pattern.period,
        }])  # fmt: skip
        if self.clock is not None and self.clock.fired.is_set() and b >= 0:
            set_json(self.store, final_key(b), {})  # before the plan: workers read it after
        set_json(self.store, plan_key(b), plan.to_json())
        self.plan = plan
        return plan

    def _close(self, worker: DSSyncWorker, final: tuple[torch.Tensor, torch.Tensor] | None,
               elapsed: float, error: str | None) -> dict[str, Any]:  # fmt: skip
        base = self.cfg.base
        writer = self.writer
        ok = "completed" if self.timed_out is None else self.timed_out
        summary: dict[str, Any] = {
            "status": ("failed" if error or final is None else
                       "ok" if self.timed_out is None else "timeout"),  # fmt: skip
            "error": error or (None if final is not None else "rank 0 was left out"),
            "reason": error or (ok if final is not None else "rank 0 was left out"),
            "scheme": self.cfg.scheme, "workers": base.workers, "model": base.model,
            "dataset": base.dataset, "parameters": self.num_params, "elapsed_s": elapsed,
            "racks": [list(r) for r in self.cfg.rack_map()],
            "nic_mb_s": list(self.cfg.nic_mb_s), "uplink_mb_s": list(self.cfg.uplink_mb_s),
            "t_started": self.t0,
            "iterations_per_worker": iterations_per_worker(writer.workers, base.workers),
            "lost_workers": {str(w): self.lost.get(w, "left out at a boundary")
                             for w in sorted(set(range(base.workers)) - set(self.plan.live))},
            "lost_evidence": {str(w): ev for w, ev in sorted(self.evidence.items())},
            "lost_at": {str(w): at for w, at in sorted(self.lost_at.items())},
            **row_stats(writer.workers), "boundaries": len(writer.trace),
            "last_boundary": writer.trace[-1] if writer.trace else None,
            "run_dir": str(self.run_dir),
        }  # fmt: skip
        if final is not None:
            ema, avg = final
            summary.update(self._evaluate(ema, "ema"))
            summary.update(self._evaluate(avg, "avg"))
            state = worker.job.state_dict(ema, buffers_of(worker.model))
            torch.save({"flat": ema, "model_avg": avg, "model": worker.flat.clone(),
                        "model_name": base.model, "state_dict": state},
                       self.run_dir / "final_params.pt")  # fmt: skip
        writer.close(summary)
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        if base.plots:
            plots_or_warn(self.run_dir)
        return summary

    def _evaluate(self, flat: torch.Tensor, name: str) -> dict[str, Any]:
        base = self.cfg.base
        job = TrainingJob(base)
        if not job.evaluates or base.scripted_compute:
            return {}
        out = job.evaluate(job.with_params(flat), torch.device("cpu"))
        return {f"{name}_{k}": v for k, v in out.items()}


class _StopTimer(threading.Timer):
    """Publishes :data:`STOP_KEY` when the run's time limit passes (``fired`` is then set)."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(limit_s, self._stop)
        self.daemon = True
        self.fired = threading.Event()

    def _stop(self) -> None:
        self.fired.set()
        set_json(new_store(), STOP_KEY, {})


def _stop_at(limit_s: float) -> _StopTimer:
    timer = _StopTimer(limit_s)
    timer.start()
    return timer


def row_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Communication time per iteration (successful syncs), iterations, failures, last loss."""
    ok = [float(r["push_s"]) for r in rows if r.get("ok", True)]
    last: dict[int, float] = {}
    for r in sorted(rows, key=lambda r: r["iteration"]):
        if not math.isnan(float(r["loss"])):
            last[int(r["worker"])] = float(r["loss"])
    return {
        "iterations": len(rows), "failed_syncs": sum(1 for r in rows if not r.get("ok", True)),
        "comm_ms_mean": 1e3 * sum(ok) / len(ok) if ok else None,
        "comm_ms_median": 1e3 * sorted(ok)[len(ok) // 2] if ok else None,
        "final_loss": sum(last.values()) / len(last) if last else None,
    }  # fmt: skip

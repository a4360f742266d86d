"""Flower's own ``FedAvg.start()`` on the project's ClientApp, as a baseline.

``strategy='fedavg'`` runs it: round-synchronous, real time, no network or
delay emulation; it samples ``max(int(N * fraction), 2)`` nodes per round and
weights by ``num-examples``. Used to check that BSP with C = 1, weighted
averaging and no delays produces the same model, and to compare throughput.
"""

from __future__ import annotations

import time

import numpy as np
from flwr.app import ArrayRecord, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.object_wait import OBJECT_WAIT, bounded_object_pulls
from fl_r2sp.fl.server.evaluation import CentralEvaluator
from fl_r2sp.fl.server.run_files import write_run_dir
from fl_r2sp.fl.server.run_output import RunOutput
from fl_r2sp.models.weights import flatten
from fl_r2sp.telemetry.eventlog import EventLog


def run_fedavg(grid: Grid, cfg: RunConfig, arrays: ArrayRecord) -> RunOutput:
    """Run stock FedAvg for ``cfg.max_updates`` rounds and write a run directory."""
    evaluator = CentralEvaluator(cfg)
    history: list[dict[str, float]] = []
    started = time.perf_counter()

    def evaluate_fn(server_round: int, rec: ArrayRecord) -> MetricRecord:
        loss, acc = evaluator(flatten(rec.to_numpy_ndarrays()))
        wall = time.perf_counter() - started
        history.append(
            {"version": server_round, "time": wall, "loss": loss, "accuracy": acc, "wall": wall}
        )
        return MetricRecord({"loss": loss, "accuracy": acc})

    strategy = FedAvg(
        fraction_train=cfg.fraction, fraction_evaluate=0.0, min_available_nodes=cfg.num_partitions
    )
    # Stock FedAvg pulls replies through the same HttpGrid call as the FL-R²SP strategies: a
    # reply whose objects never arrive must not hold it for Flower's 180 s session either.
    with bounded_object_pulls(OBJECT_WAIT):
        result = strategy.start(
            grid=grid,
            initial_arrays=arrays,
            num_rounds=cfg.max_updates,
            timeout=cfg.job_timeout,
            evaluate_fn=evaluate_fn,
        )
    weights = flatten(result.arrays.to_numpy_ndarrays())
    summary = {
        "strategy": "fedavg",
        "global_updates": cfg.max_updates,
        "clock": "wall",
        "final_accuracy": history[-1]["accuracy"],
        "final_loss": history[-1]["loss"],
        "wall_seconds": time.perf_counter() - started,
    }
    out = RunOutput(np.asarray(weights, np.float32), history, summary, EventLog())
    out.run_dir = write_run_dir(cfg.replace(plots=False), out)
    return out

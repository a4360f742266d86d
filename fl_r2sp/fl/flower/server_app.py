"""The project's Flower ServerApp: runs the configured scheme.

``flwr run .`` starts it with the run config of ``pyproject.toml`` (override
any key with ``--run-config "key=value ..."``). The scheme is chosen by
``strategy`` (fl-r2sp, bsp, asp, fedasync, fedbuff); ``clock`` picks virtual
(emulated, deterministic) or wall (real) time. Each run writes its folder
under ``run-dir``.
"""

from __future__ import annotations

import logging
from typing import Any

from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp

from fl_r2sp.datasets import dataset_info
from fl_r2sp.fl.clients.runtime import data_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.heartbeat_guard import retry_heartbeat_5xx
from fl_r2sp.fl.flower.log_output import ensure_log_output
from fl_r2sp.fl.flower.run_config_check import check_run_config
from fl_r2sp.fl.flower.strategy import strategy_for
from fl_r2sp.fl.server.admission import RunFailed
from fl_r2sp.fl.server.evaluation import initial_weights
from fl_r2sp.fl.server.run_files import write_failed_start
from fl_r2sp.models import build_model, resolve_model_name
from fl_r2sp.models.weights import state_to_arrays, unflatten

app = ServerApp()


def _record_failed_start(values: dict[str, Any], exc: ValueError) -> None:
    """Log why the run cannot start and, if its config parses, leave a failed run folder.

    ``flwr run`` exits 0 whatever the ServerApp raises, so the folder (``status: failed``,
    ``failure``: the message) and the log line are what a user sees of, e.g., a model
    import path that breaks its contract.
    """
    log = logging.getLogger("fl_r2sp")
    try:
        cfg = RunConfig.from_run_config(values)
    except ValueError:  # the config itself is bad: no run-dir to write into
        log.error("run failed before training: %s", exc)
        return
    folder = write_failed_start(cfg, str(exc))
    log.error("run failed before training: %s; its folder: %s", exc, folder)


@app.main()
def main(grid: Grid, context: Context) -> None:
    """Validate the run config, build the initial model, run the strategy."""
    ensure_log_output()
    retry_heartbeat_5xx()  # a busy SuperLink's HTTP 500 must not end the run's heartbeat
    # First act: every key, the spec keys (attack, delay ...) and a user's model / dataset
    # import path included, named if bad.
    try:
        cfg = check_run_config(dict(context.run_config))
    except ValueError as exc:
        _record_failed_start(dict(context.run_config), exc)
        raise
    if not cfg.timing_only:
        data_for(cfg)  # missing data files fail here, before any node is asked to train
    name = resolve_model_name(cfg.model, cfg.dataset)
    template = state_to_arrays(build_model(name, num_classes=dataset_info(cfg.dataset)[1]))
    arrays = ArrayRecord(unflatten(initial_weights(cfg), template))
    if cfg.strategy == "fedavg":
        from fl_r2sp.fl.flower.fedavg_baseline import run_fedavg

        run_fedavg(grid, cfg, arrays)
        return
    strategy = strategy_for(cfg)
    strategy.own_model = True  # built here from model/dataset: scored on the test split
    try:
        strategy.start(
            grid=grid, initial_arrays=arrays, num_rounds=cfg.max_updates, timeout=cfg.job_timeout
        )
    except RunFailed as exc:
        # Flower marks the run finished:failed; the run directory (status "failed") is written.
        logging.getLogger("fl_r2sp").error("%s", exc)
        raise

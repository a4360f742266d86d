"""Wire a run together: policy + transport + clock + network + telemetry.

``run(cfg)`` is the one entry point used by the Flower strategies
(:mod:`fl_r2sp.fl.flower.strategy`, over the Grid transport), the experiment
scripts and the tests (over the in-process transport)::

    from fl_r2sp.fl.config import RunConfig
    from fl_r2sp.fl.server.runner import run
    out = run(RunConfig(strategy="bsp", max_updates=10))
    print(out.summary["final_accuracy"], out.run_dir)
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from fl_r2sp.emulation.availability import make_availability
from fl_r2sp.emulation.network import Network, star_network
from fl_r2sp.emulation.profiles import get_profile
from fl_r2sp.fl.clients.specs import check_specs
from fl_r2sp.fl.clients.timing import JobTiming
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.base import Policy
from fl_r2sp.fl.policies.factory import STRATEGIES, make_policy
from fl_r2sp.fl.policies.registry import scheme
from fl_r2sp.fl.server.admission import (
    Admission,
    AdmissionParams,
    RunFailed,
    progress_problem,
    run_problem,
)
from fl_r2sp.fl.server.checkpoint import Saved, attach, load_checkpoint, resume
from fl_r2sp.fl.server.loop_base import Evaluator, LoopBase, StopRule
from fl_r2sp.fl.server.run_files import TRACE_INTERVAL, write_run_dir
from fl_r2sp.fl.server.run_output import RunOutput
from fl_r2sp.fl.server.transport import Transport
from fl_r2sp.fl.server.virtual_loop import VirtualLoop
from fl_r2sp.fl.server.wall_loop import WallLoop
from fl_r2sp.fl.user_code import check_user_code

log = logging.getLogger("fl_r2sp")


def run(
    cfg: RunConfig,
    transport: Transport | None = None,
    initial: np.ndarray | None = None,
    evaluator: Evaluator | None = None,
    write: bool = True,
    progress: bool = True,
    run_name: str | None = None,
    own_model: bool = True,
    on_evaluate: Callable[[int, float, np.ndarray], None] | None = None,
) -> RunOutput:
    """Run one configuration to its stop condition.

    Parameters
    ----------
    cfg : RunConfig
        The validated configuration.
    transport : Transport or None (default: None)
        Where jobs run; None = in this machine with :class:`ClientRuntime`, computed
        by the executor ``cfg.executor`` names (:mod:`fl_r2sp.fl.server.executor`).
    initial : np.ndarray or None (default: None)
        Initial flat weights; None = the model's seeded initialisation.
    evaluator : callable or None (default: None)
        ``weights -> (loss, accuracy)``; None = central test-set evaluation.
    write : bool (default: True)
        Write the run directory under ``cfg.run_dir``.
    progress : bool (default: True)
        Log a line per evaluation and a summary at the end.
    run_name : str or None (default: None)
        Folder name (default: strategy-dataset-seed-timestamp).
    own_model : bool (default: True)
        The model is the project's (``model`` on ``dataset``). False (a user's model given
        as ``initial``, e.g. a stock Flower app's): nothing of the project's model or data
        is loaded; no central evaluation unless ``evaluator`` is given, no known outlier
        ids, ``num-examples`` checked only for >= 1, jobs' lower bounds from
        :class:`~fl_r2sp.fl.clients.timing.JobTiming`.
    on_evaluate : callable or None (default: None)
        Called as ``(version, time, weights)`` at each evaluation point (the Flower
        strategies' federated evaluation).

    Returns
    -------
    RunOutput
        The final weights, evaluation history, summary, event log and link traces, and
        the run directory when ``write`` is True.

    Raises
    ------
    ValueError
        Before anything runs: an invalid config, or a user's ``model`` / ``dataset`` import
        path that breaks its contract (:class:`~fl_r2sp.importpath.ImportPathError`, naming
        the path and what was wrong; :mod:`fl_r2sp.fl.user_code`).
    RunFailed
        After the run directory is written, if the final model is non-finite,
        more than ``max-lost-share`` of the clients were lost
        (:func:`fl_r2sp.fl.server.admission.run_problem`), or the run made too little
        progress: no global update at all or for ``max-update-gap`` s, or more than
        ``max-rejected-share`` of its finished jobs unaccepted
        (:func:`~fl_r2sp.fl.server.admission.progress_problem`); ``summary["status"]``
        is then ``"failed"`` and ``summary["failure"]`` says why.
    """
    from fl_r2sp.fl.clients.runtime import data_for, runtime_for
    from fl_r2sp.fl.server.evaluation import CentralEvaluator, initial_weights

    cfg = _effective(cfg)
    if not own_model and (transport is None or initial is None):
        raise ValueError("own_model=False needs the user's transport and initial weights")
    check_specs(cfg)  # the spec keys (delay, attack ...), named if bad, before anything runs
    check_user_code(cfg)  # a user's model / dataset path: its contract, before anything runs
    saved = load_checkpoint(cfg) if cfg.resume_from else None  # fails before any training
    # Loading here fails early (before any training) on missing data files.
    project_data = own_model and not cfg.timing_only
    outliers = frozenset(data_for(cfg).partition.outlier_ids) if project_data else frozenset()
    # The project's model: its runtime (and the attack spec) is checked before any training.
    runtime = runtime_for(cfg) if own_model else None
    if transport is None:
        from fl_r2sp.fl.server.executor import make_transport

        # Jobs run in this machine; cfg.executor picks how (serial, processes, batched).
        assert runtime is not None
        transport = make_transport(cfg, runtime)
    clients = transport.clients()
    _check_clients(cfg, clients)
    weights = initial_weights(cfg) if initial is None else _as_flat_model(initial)
    policy = make_policy(cfg, clients, outliers)
    if evaluator is None and project_data:
        evaluator = CentralEvaluator(cfg)
    timing = JobTiming(cfg)
    loop, network = _build_loop(
        cfg,
        policy,
        transport,
        weights,
        evaluator,
        progress,
        {c: timing.lower_bound(c) for c in clients},
    )
    sizes = _partition_sizes(cfg) if own_model else None
    loop.admission = Admission(
        AdmissionParams.from_config(cfg, sizes), weights.size, weights.dtype.type
    )
    # checkpoint-every / resume-from (fl_r2sp/fl/server/checkpoint.py): the folder to finish.
    directory = attach(cfg, loop, clients, saved, run_name)
    loop.on_evaluate = on_evaluate
    started = time.perf_counter()
    final, stop = _drive(loop, saved, weights, clients, transport)
    interrupted = stop if isinstance(stop, KeyboardInterrupt) else None
    network = getattr(loop, "net", network)  # a resumed loop holds the checkpointed one
    try:
        out = _finish(cfg, loop, final, network, outliers, started)
        problem = _health(cfg, out, len(clients), interrupted is not None)
        if stop is not None and interrupted is None:  # the loop raised: the run failed
            problem = f"the server loop raised {type(stop).__name__}: {stop}"
            out.summary.update(status="failed", failure=problem)
        if write:
            out.run_dir = write_run_dir(
                cfg, out, run_name, directory, interrupted is None, own_data=own_model
            )
    except Exception:
        if stop is None:
            raise
        log.exception("the folder of the stopped run could not be written")
        raise stop from None
    if stop is not None:
        what = "interrupted" if interrupted is not None else "failed"
        log.error("run %s; its folder: %s", what, out.run_dir)
        raise stop
    if progress:
        from fl_r2sp.telemetry.summary import format_summary

        log.info("\n%s", format_summary(out.summary))
        log.info(
            "updates: %d accepted, rejected %s, jobs dropped %s, in flight at the stop %d",
            out.summary["updates_accepted"],
            out.summary["updates_rejected"] or "none",
            out.summary["jobs_dropped"] or "none",
            out.summary["jobs_in_flight"],
        )
        if out.run_dir is not None:
            log.info("run directory: %s", out.run_dir)
    if problem is not None:
        log.error("run failed: %s", problem)
        raise RunFailed(problem, out)
    return out


def _drive(
    loop: LoopBase,
    saved: Saved | None,
    weights: np.ndarray,
    clients: list[int],
    transport: Transport,
) -> tuple[np.ndarray, BaseException | None]:
    """Run (or resume) ``loop`` to its stop; the final weights and what stopped it, if not
    the loop's own rule: a ``KeyboardInterrupt`` or the exception the loop raised.

    Ctrl-C and SIGTERM end the loop as an interruption, an exception from the loop (a
    transport, an evaluator, a bug) as a failure; either way the caller writes the folder of
    what ran, then re-raises it, and the jobs still out are filed as in flight.
    """
    stop: BaseException | None = None
    try:
        with _sigterm_interrupts():
            final = loop.run(weights, clients) if saved is None else resume(loop, saved)
    except KeyboardInterrupt as exc:
        stop, final = exc, loop.policy.weights
        loop.finish(f"interrupted ({exc or 'SIGINT'})")
    except Exception as exc:
        stop, final = exc, loop.policy.weights
        loop.finish(f"failed ({type(exc).__name__})")
    finally:
        transport.close()
    loop.settle_in_flight()
    return final, stop


def _as_flat_model(initial: np.ndarray) -> np.ndarray:
    """The initial flat model: float64 stays float64 (a float64 user model), else float32."""
    arr = np.asarray(initial)
    return arr if arr.dtype == np.float64 else arr.astype(np.float32)


def _partition_sizes(cfg: RunConfig) -> dict[int, int] | None:
    """Training examples per partition id, as the server partitions the data (None: not loaded)."""
    if cfg.timing_only:
        return None  # timing runs load no data; clients report 1 example
    from fl_r2sp.fl.clients.runtime import data_for

    return {i: int(n) for i, n in enumerate(data_for(cfg).partition.sizes())}


def _health(
    cfg: RunConfig, out: RunOutput, num_clients: int, interrupted: bool = False
) -> str | None:
    """Record the run's status and lost clients in its summary; the failure reason or None.

    An interrupted run's status is ``interrupted`` (its ``failure`` says so); it is not
    judged further.
    """
    lost = list(out.summary.get("policy_dropped") or [])
    problem = run_problem(out.weights, len(lost), num_clients, cfg.max_lost_share)
    problem = problem or progress_problem(out.summary, cfg.max_rejected_share)
    status = "interrupted" if interrupted else ("failed" if problem else "completed")
    out.summary.update(
        clients_lost=len(lost),
        lost_share=len(lost) / max(1, num_clients),
        status=status,
        failure=out.summary["stopped"] if interrupted else problem,
    )
    return None if interrupted else problem


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` as Ctrl-C does (main thread only).

    So a stopped run (``flwr stop``, a service manager) writes its folder as ``interrupted``
    instead of vanishing; the previous handler is put back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _build_loop(
    cfg: RunConfig,
    policy: Policy,
    transport: Transport,
    weights: np.ndarray,
    evaluator: Evaluator | None,
    progress: bool,
    compute_lb: dict[int, float],
) -> tuple[LoopBase, Network | None]:
    """The virtual-time loop over a star network, or the wall-clock loop."""
    stop = StopRule(cfg.max_updates, cfg.time_budget, cfg.convergence_window, cfg.convergence_tol)
    # The loops take these as ``**base: Any`` (passed on to LoopBase).
    base: dict[str, Any] = dict(
        policy=policy,
        transport=transport,
        model_size=weights.size,
        evaluator=evaluator,
        stop=stop,
        eval_every=cfg.eval_every,
        progress=progress,
    )
    if cfg.clock == "wall":
        wall = WallLoop(
            job_timeout=cfg.job_timeout,
            resend_backoff=cfg.resend_backoff,
            job_timeout_factor=cfg.job_timeout_factor,
            max_update_gap=cfg.max_update_gap,
            **base,
        )
        return wall, None
    profile = get_profile(cfg.network)
    network = star_network(cfg.num_partitions, profile)
    loop = VirtualLoop(
        network=network,
        model_bytes=weights.nbytes,  # 4 bytes a value; 8 for a float64 model
        overhead=profile.overhead,
        compute_lb=compute_lb,
        availability=None if cfg.dropout == "none" else make_availability(cfg.dropout),
        seed=cfg.seed,
        job_timeout=cfg.job_timeout,
        **base,
    )
    return loop, network


def _effective(cfg: RunConfig) -> RunConfig:
    """Validate; in timing-only runs switch the outlier filter off.

    Echoed models have zero deltas, whose cosine score is 0: the filter would
    blacklist everyone after ``outlier-rounds`` rounds.
    """
    cfg.validate()
    if scheme(cfg.strategy).build is None:
        raise ValueError(
            f"strategy={cfg.strategy!r} is Flower's own, run it with `flwr run .`; "
            f"the event-driven runner serves {', '.join(STRATEGIES)}"
        )
    if cfg.timing_only and cfg.outlier_filter:
        log.info("timing-only run: outlier filter switched off (echoed models have no deltas)")
        cfg = cfg.replace(outlier_filter=False)
    return cfg


def _check_clients(cfg: RunConfig, clients: list[int]) -> None:
    if not clients:
        raise RuntimeError("no clients reachable: start SuperNodes or check num-supernodes")
    if len(clients) < cfg.groups:
        raise ValueError(
            f"num-groups={cfg.groups} but only {len(clients)} clients are connected; "
            "lower num-groups or start more SuperNodes"
        )
    bad = [c for c in clients if not 0 <= c < cfg.num_partitions]
    if bad:
        raise ValueError(
            f"partition ids {bad[:5]} outside 0..{cfg.num_partitions - 1}: make "
            "num-partitions match the SuperNodes' node-config"
        )


def _finish(
    cfg: RunConfig,
    loop: LoopBase,
    final: np.ndarray,
    network: Network | None,
    outliers: frozenset[int],
    started: float,
) -> RunOutput:
    from fl_r2sp.telemetry.summary import summarize_run

    traces: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if network is not None:
        until = loop.clock.now()
        for link in ("server-egress", "server-ingress"):
            traces[link] = network.trace(link, TRACE_INTERVAL, until)
    summary = loop.summary()
    summary.update(summarize_run(loop.events.jobs, loop.events.records, traces, TRACE_INTERVAL))
    summary.update(
        strategy=cfg.strategy,
        seed=cfg.seed,
        num_outliers=len(outliers),
        run_seconds=time.perf_counter() - started,
    )
    return RunOutput(final, loop.history, summary, loop.events, traces)

"""Run every rank of a job as a plain process on this machine and supervise it: the one command.

torch's elastic agent stops every rank as soon as one rank process fails (measured, see
``docs/architecture.md`` §10), which would end an ASP or R²SP run on the loss of one
worker. This supervisor leaves a lost worker to the scheme's own rule, which the runtime
applies (ASP, SSP, R²SP, SAFA, partial, selective and DS-Sync continue without it and rank 0
reports it in the summary; BSP and OSP end with an error naming it; a lost parameter server
> 0 ends the run, named by rank 0), and ends the run itself only when nobody else can:

* rank 0 (PS 0 and the coordinator, or the serverless families' leader) exits without a
  summary: the others are stopped and the run fails naming it;
* Ctrl-C or SIGTERM of the supervisor: every rank is stopped (status ``interrupted``);
* the run's time limit plus :data:`KILL_GRACE_S` passes: every rank is stopped (``timeout``).

A rank > 0 that ends with a non-zero code (killed, crashed) is published to the job at once
(:class:`~.common.losses.ExitPublisher`, evidence "process exit"): the ranks waiting on it stop
waiting within a tenth of a second and its scheme's rule applies, instead of a timeout.

Ranks ignore SIGINT (a terminal's Ctrl-C reaches the whole process group; the supervisor
decides); every rank that is left when the supervisor returns is stopped, by its handle
(SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`), so no ending leaves an orphan. A rank's own
watchdog (``runtime/common/job.py``) is the last resort if the supervisor itself is killed.

The supervisor creates the run folder and names it to the ranks (:data:`RUN_DIR_ENV`); on an
ending that rank 0 did not write up it writes ``summary.json`` (``status``, ``reason``, exit
codes, iterations per worker from the rows flushed so far) and the plots of what was recorded.
Ranks rendezvous over ``tcp://127.0.0.1:<free port>`` (rank 0 hosts the TCPStore). With the
"forkserver" start method one server process imports torch once and every rank forks from it.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.rank import run_rank
from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common.job import EXIT_TIMEOUT, timeout_reason
from fl_r2sp.cluster.runtime.common.losses import EXIT, ExitPublisher
from fl_r2sp.cluster.runtime.common.run_config import ClusterRunConfig
from fl_r2sp.cluster.runtime.common.run_dir import RUN_DIR_ENV, make_run_dir, run_name

#: Seconds the supervisor waits beyond ``run_timeout_s`` before it stops every rank.
KILL_GRACE_S = 90.0
#: Seconds between SIGTERM and SIGKILL when the supervisor stops a rank.
STOP_GRACE_S = 5.0
#: Seconds the other ranks get to leave after rank 0 has returned its summary (rank 0 itself
#: waits up to 10 s for them before it leaves; anyone still there then is stopped).
LEAVE_GRACE_S = 15.0


@dataclass
class LocalRun:
    """Outcome of :func:`run_local`.

    Attributes
    ----------
    summary : dict or None
        Rank 0's summary (None if rank 0 did not finish).
    exitcodes : list of int or None
        Exit code per rank (negative: killed by that signal; None: never ended by itself).
    wall_s : float
        Seconds from the first start to the last exit.
    run_dir : Path
        The run folder.
    ending : str
        "finished" (rank 0 returned a summary, whatever its status), "failed" (rank 0 was
        lost), "interrupted" (SIGINT/SIGTERM) or "timeout".
    reason : str or None
        Why the run ended when rank 0 did not say it.
    exited : dict of int to str
        Rank -> how it ended, for every rank > 0 the supervisor saw end with a non-zero code
        while the run went on (published to the ranks at once).
    """

    summary: dict[str, Any] | None
    exitcodes: list[int | None]
    wall_s: float
    run_dir: Path
    ending: str = "finished"
    reason: str | None = None
    exited: dict[int, str] = field(default_factory=dict)


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_of(cfg: ClusterRunConfig) -> ClusterConfig:
    """The shared :class:`ClusterConfig` of any family's run config (itself, or its ``base``).

    Raises
    ------
    TypeError
        If ``cfg`` has neither form.
    """
    base = cfg if isinstance(cfg, ClusterConfig) else getattr(cfg, "base", None)
    if not isinstance(base, ClusterConfig):
        raise TypeError(f"{type(cfg).__name__} is not a cluster run config")
    return base


def rank_name(cfg: ClusterRunConfig, rank: int) -> str:
    """'parameter server s (rank r)' or 'worker w (rank r)' (:func:`.common.names.rank_name`)."""
    return names.rank_name(rank, cfg.world_size, base_of(cfg).workers)


def exit_text(code: int) -> str:
    """'was killed by signal 9' or 'exited with code 17'."""
    return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"


def _rank_main(cfg: ClusterRunConfig, url: str, rank: int, world: int, env: dict[str, str],
               out: Any) -> None:  # fmt: skip
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor handles Ctrl-C
    os.environ.update(env)
    summary = run_rank(cfg, init_method=url, rank=rank, world_size=world, local_rank=rank)
    if summary is not None:
        out.put(summary)
    # Leave now: a gloo operation abandoned because its peer died would otherwise hold the
    # interpreter's exit (its process group's destructor) until gloo's own timeout.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_local(
    cfg: ClusterRunConfig,
    env: dict[str, str] | None = None,
    start_method: str = "forkserver",
) -> LocalRun:
    """Validate ``cfg``, run all its ranks as supervised child processes, return the outcome.

    Parameters
    ----------
    cfg : ClusterRunConfig
        The run of any family (a ``ClusterConfig``, ``ReduceRunConfig``, ``DSSyncRunConfig``).
    env : dict or None, default None
        Extra environment variables of every rank (e.g. the worker kill hook).
    start_method : str, default "forkserver"
        multiprocessing start method.
    """
    cfg.validate()
    base = base_of(cfg)
    sizes = f"w{base.workers}" + (f"s{base.servers}" if isinstance(cfg, ClusterConfig) else "")
    run_dir = make_run_dir(base.run_dir, run_name(cfg.scheme_name, sizes, base))
    ctx: Any = mp.get_context(start_method)  # typeshed's BaseContext lacks Process
    if start_method == "forkserver":
        ctx.set_forkserver_preload(["torch", "fl_r2sp.cluster.rank"])
    out = ctx.SimpleQueue()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    rank_env = {**(env or {}), RUN_DIR_ENV: str(run_dir)}
    procs = [
        ctx.Process(
            target=_rank_main,
            args=(cfg, url, r, cfg.world_size, rank_env, out),
            name=f"cluster-rank{r}",
        )  # fmt: skip
        for r in range(cfg.world_size)
    ]
    t0 = time.monotonic()
    with _signals_to_flag() as stopped:
        try:
            for p in procs:
                p.start()
            exits = ExitPublisher("127.0.0.1", port)
            run = _watch(cfg, procs, out, stopped, t0 + cfg.run_timeout_s + KILL_GRACE_S, exits)
        finally:
            _stop_all(procs)
    run.exitcodes = [p.exitcode for p in procs]
    run.exited = {r: exits.published[r] for r in sorted(exits.published)}
    run.wall_s, run.run_dir = time.monotonic() - t0, run_dir
    if run.summary is None:
        record_ending(run_dir, cfg, run)
    return run


def _watch(cfg: ClusterRunConfig, procs: list[Any], out: Any, stopped: threading.Event,
           deadline: float, exits: ExitPublisher) -> LocalRun:  # fmt: skip
    """Wait until every rank has ended, rank 0 has ended (without summary: failed; with one:
    the others get :data:`LEAVE_GRACE_S`), a signal came, or the deadline passed. A rank > 0
    that ends with a non-zero code is published at once (:mod:`.common.losses`): the ranks
    waiting on it stop waiting and its scheme's rule decides."""
    summary: dict[str, Any] | None = None
    left_at: float | None = None

    def outcome(ending: str, reason: str | None = None) -> LocalRun:
        return LocalRun(summary, [], 0.0, Path(), ending, reason)

    while True:
        # Drain the queue while waiting: a child blocks on exit until its message is read.
        while not out.empty():
            summary = out.get()
        if stopped.is_set():
            return outcome("interrupted", "stopped by a signal (Ctrl-C or SIGTERM)")
        now = time.monotonic()
        if now > deadline:
            limit = f"{cfg.run_timeout_s:.0f}s + {KILL_GRACE_S:.0f}s"
            return outcome("timeout", f"the run exceeded its time limit of {limit}")
        code = procs[0].exitcode
        if code is not None and summary is None and out.empty():
            if code == EXIT_TIMEOUT:  # its watchdog ended it
                return outcome("timeout", timeout_reason(cfg.run_timeout_s))
            return outcome("failed", f"{rank_name(cfg, 0)} {exit_text(code)} before it wrote the "
                                     "run's summary; the run cannot go on without it")  # fmt: skip
        if all(p.exitcode is not None for p in procs):
            return outcome("finished")
        if code is None:
            _publish_exits(cfg, procs, exits)
        if code is not None:
            left_at = now if left_at is None else left_at
            if now - left_at > LEAVE_GRACE_S:
                return outcome("finished")
        procs[0].join(0.1)


def _publish_exits(cfg: ClusterRunConfig, procs: list[Any], exits: ExitPublisher) -> None:
    """Publish every rank > 0 that ended with a non-zero code and is not yet published."""
    for r, p in enumerate(procs[1:], start=1):
        code = p.exitcode
        if code not in (None, 0) and r not in exits.published:
            exits.publish(r, rank_name(cfg, r), exit_text(code))


@contextmanager
def _signals_to_flag() -> Iterator[threading.Event]:
    """Within the block, SIGINT and SIGTERM set the yielded event instead of raising (only in
    the main thread, where Python delivers signals; elsewhere the event is never set)."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    old = {s: signal.signal(s, lambda *_: flag.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield flag
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _stop_all(procs: list[Any]) -> None:
    """Stop every rank still running, by its handle: SIGTERM, then SIGKILL."""
    alive = [p for p in procs if p.pid is not None and p.is_alive()]
    for p in alive:
        p.terminate()
    end = time.monotonic() + STOP_GRACE_S
    for p in alive:
        p.join(max(0.0, end - time.monotonic()))
    for p in alive:
        if p.is_alive():
            p.kill()
            p.join(STOP_GRACE_S)


def record_ending(run_dir: Path, cfg: ClusterRunConfig, run: LocalRun) -> dict[str, Any]:
    """Write ``summary.json`` (and ``run.json``'s summary, and the plots unless disabled) of an
    ending that rank 0 did not write up; return the summary.

    The summary holds ``status`` (the ending), ``reason``, the exit code of every rank (named)
    and the iterations per worker found in the rows flushed to ``workers.csv``.
    """
    from fl_r2sp.cluster.telemetry import iterations_per_worker, plots_or_warn, read_json, read_rows

    base = base_of(cfg)
    rows = read_rows(run_dir / "workers.csv") if (run_dir / "workers.csv").is_file() else []
    lost = {names.worker_of_rank(r, cfg.world_size, base.workers): why
            for r, why in run.exited.items()}  # fmt: skip
    summary = {
        "status": run.ending, "reason": run.reason, "error": run.reason,
        "scheme": cfg.scheme_name, "workers": base.workers,
        "exitcodes": {rank_name(cfg, r): c for r, c in enumerate(run.exitcodes)},
        "iterations_per_worker": iterations_per_worker(rows, base.workers),
        "lost_workers": {str(w): why for w, why in lost.items() if w is not None},
        "lost_evidence": {str(w): EXIT for w in lost if w is not None},
        "wall_s": run.wall_s, "run_dir": str(run_dir),
    }  # fmt: skip
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    doc = read_json(run_dir / "run.json")
    doc["summary"] = summary
    (run_dir / "run.json").write_text(json.dumps(doc, indent=2) + "\n")
    if base.plots and rows:
        plots_or_warn(run_dir)
    return summary

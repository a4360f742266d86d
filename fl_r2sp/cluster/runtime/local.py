"""Run every rank of a job as a plain process on this machine, without torch's elastic agent.

The elastic launcher stops all ranks as soon as one rank process fails; this runner does not
supervise, so a worker that dies leaves the others to the runtime's own fault handling (the
coordinator drops it or ends the run). Tests and benchmarks use it; ``python -m
fl_r2sp.cluster`` uses the elastic launcher.

Ranks rendezvous over ``tcp://127.0.0.1:<free port>`` (rank 0 hosts the TCPStore). With the
"forkserver" start method one server process imports torch once and every rank forks from it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from fl_r2sp.cluster.runtime.common.run_config import RunConfig
from fl_r2sp.cluster.runtime.rank import run_rank

#: Seconds the runner waits beyond ``run_timeout_s`` before it kills ranks that are left.
KILL_GRACE_S = 90.0


@dataclass
class LocalRun:
    """Outcome of :func:`run_local`.

    Attributes
    ----------
    summary : dict or None
        Rank 0's summary (None if rank 0 did not finish).
    exitcodes : list of int or None
        Exit code per rank (negative: killed by that signal).
    wall_s : float
        Seconds from the first start to the last exit.
    """

    summary: dict[str, Any] | None
    exitcodes: list[int | None]
    wall_s: float


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rank_main(cfg: RunConfig, url: str, rank: int, world: int, env: dict[str, str],
               out: Any) -> None:  # fmt: skip
    os.environ.update(env)
    summary = run_rank(cfg, init_method=url, rank=rank, world_size=world, local_rank=rank)
    if summary is not None:
        out.put(summary)


def run_local(
    cfg: RunConfig,
    env: dict[str, str] | None = None,
    start_method: str = "forkserver",
) -> LocalRun:
    """Validate ``cfg``, run all its ranks as child processes, wait, return the outcome.

    Parameters
    ----------
    cfg : RunConfig
        The run of any family (a ``ClusterConfig``, ``ReduceRunConfig``, ``DSSyncRunConfig``).
    env : dict or None, default None
        Extra environment variables of every rank (e.g. the worker kill hook).
    start_method : str, default "forkserver"
        multiprocessing start method.
    """
    cfg.validate()
    ctx: Any = mp.get_context(start_method)  # typeshed's BaseContext lacks Process
    if start_method == "forkserver":
        ctx.set_forkserver_preload(["torch", "fl_r2sp.cluster.runtime.rank"])
    out = ctx.SimpleQueue()
    url = f"tcp://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    procs = [
        ctx.Process(
            target=_rank_main,
            args=(cfg, url, r, cfg.world_size, env or {}, out),
            name=f"cluster-rank{r}",
        )
        for r in range(cfg.world_size)
    ]
    for p in procs:
        p.start()
    deadline = t0 + cfg.run_timeout_s + KILL_GRACE_S
    summary = None
    # Drain the queue while waiting: a child blocks on exit until its message is read.
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        if not out.empty():
            summary = out.get()
        procs[0].join(0.1)
    for p in procs:
        if p.is_alive():  # only our own children, by handle
            p.kill()
            p.join(5.0)
    if summary is None and not out.empty():
        summary = out.get()
    return LocalRun(summary, [p.exitcode for p in procs], time.monotonic() - t0)

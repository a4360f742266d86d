"""The in-process transport over an executor, and the factory the runner calls.

:class:`ExecutorTransport` passes every job to its executor as soon as the
loop submits it (so workers compute ahead while the loop waits on the
conservative gate) and hands back replies when the loop polls. Under the
virtual clock a poll waits until some reply is there, as the serial
in-process transport always did (it computed a job inside ``poll``): jobs
queued behind others must not count against ``job-timeout``. That wait is
bounded too: no reply for ``job-timeout`` wall seconds raises
:class:`ExecutorError`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from fl_r2sp.fl.clients.runtime import ClientRuntime
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.executor.base import Executor, ExecutorError, resolve_workers
from fl_r2sp.fl.server.executor.serial import SerialExecutor

log = logging.getLogger("fl_r2sp")


class ExecutorTransport:
    """Transport whose clients are computed in this machine by an :class:`Executor`.

    Parameters
    ----------
    client_ids : Sequence[int]
        Partition ids served.
    executor : Executor
        Computes the jobs.
    wait_for_reply : float (default: 0 = off)
        If > 0, :meth:`poll` keeps waiting past its timeout until a reply
        arrives, for at most this many seconds (the virtual clock's mode).
    """

    def __init__(
        self, client_ids: Sequence[int], executor: Executor, wait_for_reply: float = 0.0
    ) -> None:
        self._ids = sorted(int(c) for c in client_ids)
        self.executor = executor
        self._wait = wait_for_reply
        self._busy: set[int] = set()

    def clients(self) -> list[int]:
        """Partition ids served."""
        return list(self._ids)

    def submit(self, job: Job) -> None:
        """Hand ``job`` to the executor; raises if its client already has a job in flight."""
        if job.cid in self._busy:
            raise RuntimeError(f"client {job.cid} already has a job in flight")
        self._busy.add(job.cid)
        self.executor.submit(job)

    def poll(self, timeout: float) -> list[Reply]:
        """Replies that are ready, waiting up to ``timeout`` s (see ``wait_for_reply``)."""
        replies = self.executor.collect(timeout)
        if not replies and self._wait > 0 and self.executor.outstanding():
            give_up = time.monotonic() + self._wait
            while not replies and self.executor.outstanding():
                if time.monotonic() > give_up:
                    raise ExecutorError(
                        f"no client job finished within {self._wait:g} s while "
                        f"{self.executor.outstanding()} were outstanding; raise job-timeout "
                        "if jobs are this slow, else a worker hangs"
                    )
                replies = self.executor.collect(1.0)
        for reply in replies:
            self._busy.discard(reply.cid)
        return replies

    def forget(self, cid: int) -> None:
        """Drop ``cid``'s outstanding job."""
        self.executor.cancel(cid)
        self._busy.discard(cid)

    def close(self) -> None:
        """Close the executor (outstanding jobs are dropped)."""
        self.executor.close()
        self._busy.clear()


def make_executor(cfg: RunConfig, runtime: ClientRuntime) -> Executor:
    """The executor ``cfg.executor`` names, on ``cfg.compute_device``.

    Timing-only runs train nothing, so they always run serially.
    """
    if cfg.compute_device == "cuda" and cfg.executor != "batched":
        raise ValueError(
            f"compute-device='cuda' needs executor='batched' "
            f"(executor={cfg.executor!r} trains on the CPU)"
        )
    if cfg.executor == "serial" or cfg.timing_only:
        sleep = cfg.clock == "wall"
        return SerialExecutor(lambda job: runtime.run(job, sleep))
    if cfg.executor == "processes":
        from fl_r2sp.fl.server.executor.processes import ProcessExecutor

        return ProcessExecutor(cfg, resolve_workers(cfg.executor_workers))
    if cfg.executor == "batched":
        from fl_r2sp.fl.server.executor.batched import BatchedExecutor, resolve_device

        device = resolve_device(cfg.compute_device)
        log.info("batched executor on %s", device)
        workers = resolve_workers(cfg.executor_workers)
        return BatchedExecutor(cfg, runtime, device, cfg.executor_stack, workers)
    raise ValueError(f"executor={cfg.executor!r} is not one of 'serial', 'processes', 'batched'")


def make_transport(cfg: RunConfig, runtime: ClientRuntime) -> ExecutorTransport:
    """The in-process transport of a run: all ``num-partitions`` clients over its executor."""
    wait = cfg.job_timeout if cfg.clock == "virtual" else 0.0
    return ExecutorTransport(range(cfg.num_partitions), make_executor(cfg, runtime), wait)

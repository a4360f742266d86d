"""The ``processes`` executor: whole jobs in a pool of single-threaded worker processes.

Each worker trains one job at a time with ``ClientRuntime.run``, exactly as
the serial executor does, from the training set it loaded once. A job's
result is a pure function of (run seed, partition id, job index, start
weights) and the torch thread count, so it is bit-identical to the serial
executor's whatever the pool size and whichever worker ran it. Replies come
back in the order jobs finish; the virtual-time loop does not depend on it.
"""

from __future__ import annotations

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.executor.pool import WorkerPool


class ProcessExecutor:
    """Trains jobs in ``workers`` processes; replies come back as they finish.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration (each worker builds its runtime from it).
    workers : int
        Number of worker processes (>= 1); one per core is the fast choice
        with ``torch-threads = 1``.
    start_method : str or None (default: None)
        ``forkserver`` (default where available) or ``spawn``.
    """

    def __init__(self, cfg: RunConfig, workers: int, start_method: str | None = None) -> None:
        self.pool = WorkerPool(cfg, workers, "jobs", start_method)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers, in worker order."""
        return self.pool.worker_pids

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Block until every worker has built its runtime and loaded the data."""
        self.pool.wait_ready(timeout)

    def submit(self, job: Job) -> None:
        """Queue ``job`` for the next free worker (returns at once)."""
        self.pool.put((job.cid, job.index), job)

    def collect(self, timeout: float) -> list[Reply]:
        """Replies finished so far; if none, wait up to ``timeout`` s for one."""
        return [reply for _, reply in self.pool.results(timeout)]

    def cancel(self, cid: int) -> None:
        """Forget ``cid``'s outstanding job (a worker may still run it; its reply is dropped)."""
        for key in [k for k in self.pool.open_keys() if isinstance(k, tuple) and k[0] == cid]:
            self.pool.discard(key)

    def outstanding(self) -> int:
        """Jobs submitted and not yet returned."""
        return self.pool.pending()

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak memory of this process and of each worker (as of its last reply)."""
        return self.pool.peak_rss_kb()

    def close(self) -> None:
        """Stop the workers (outstanding jobs are dropped)."""
        self.pool.close()

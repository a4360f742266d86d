"""Outstanding jobs trained together as stacked models (``torch.func``), on CPU or CUDA.

When the loop asks for replies and none is ready, :meth:`BatchedExecutor.collect`
trains every outstanding job: :func:`plan_stacks` cuts them, in submission
order and by batch size (clients with fewer samples than ``batch-size``
train on smaller batches), into near-equal stacks of at most ``max_stack``
jobs, and at least one per worker. On CUDA one process trains the stacks one
after the other; on a CPU ``executor-workers`` processes (one per core by
default) train them side by side, each single-threaded with its own copy of
the training set.

A stack is trained by a :class:`~fl_r2sp.fl.server.executor.stack_trainer.StackTrainer`.
How a stack's step is computed (grouped or unfold + bmm convolutions,
``torch.compile``, CUDA graphs) is the run config's ``executor-conv``,
``executor-compile`` and ``executor-cuda-graphs``
(:class:`~fl_r2sp.training.stacked.StackKernels`).

Which jobs share a stack depends only on the loop's sequence of submissions
and collections, which the virtual clock fixes, and on the worker count: a
seed gives the same stacks and the same results on every run with the same
device and ``executor-workers``.
"""

from __future__ import annotations

import math

import torch

from fl_r2sp.fl.clients.runtime import ClientRuntime, data_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.executor.base import ExecutorError, self_peak_rss_kb
from fl_r2sp.fl.server.executor.pool import WorkerPool
from fl_r2sp.fl.server.executor.stack_trainer import StackTrainer, stack_kernels

#: ``executor-stack = 0``: jobs per stack by device. On a CPU, wide stacks
#: turn convolutions into slow grouped kernels; a GPU takes all it is given.
AUTO_STACK = {"cpu": 16, "cuda": 1024}


def resolve_device(name: str) -> torch.device:
    """``compute-device`` -> torch device: auto = cuda when available, else cpu."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("compute-device='cuda' but torch sees no CUDA device; use 'auto' or 'cpu'")
    if name not in ("cpu", "cuda"):
        raise ValueError(f"compute-device={name!r} is not one of 'auto', 'cpu', 'cuda'")
    return torch.device(name)


def plan_stacks(batches: list[int], max_stack: int, workers: int = 1) -> list[list[int]]:
    """Cut outstanding jobs into stacks: positions into ``batches``, in order.

    Jobs stack with jobs of the same batch size only; each such group is cut
    into ``max(ceil(n / max_stack), min(workers, n))`` near-equal consecutive
    runs (sizes differ by at most one), so no stack exceeds ``max_stack`` and
    every worker gets one when there are enough jobs.

    Parameters
    ----------
    batches : list of int
        Batch size of each outstanding job, in submission order.
    max_stack : int
        Most jobs per stack (>= 1).
    workers : int (default: 1)
        Processes that will train the stacks.
    """
    if max_stack < 1 or workers < 1:
        raise ValueError(f"need max_stack >= 1 and workers >= 1, got {max_stack}, {workers}")
    groups: dict[int, list[int]] = {}
    for pos, b in enumerate(batches):
        groups.setdefault(b, []).append(pos)
    stacks: list[list[int]] = []
    for members in groups.values():
        n = len(members)
        count = max(math.ceil(n / max_stack), min(workers, n))
        cuts = [n * k // count for k in range(count + 1)]
        stacks += [members[cuts[k] : cuts[k + 1]] for k in range(count)]
    return stacks


class BatchedExecutor:
    """Trains the outstanding jobs as stacks, in this process or in CPU worker processes.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration (virtual clock only: a stack has no per-job
        wall time).
    runtime : ClientRuntime
        Supplies the model, the modelled compute time and the injected delays.
    device : torch.device
        Where to train.
    max_stack : int (default: 0 = :data:`AUTO_STACK` of the device type)
        Most jobs per stack (bounds memory).
    workers : int (default: 1)
        CPU only: processes training stacks side by side (1 = this process).
    """

    def __init__(
        self,
        cfg: RunConfig,
        runtime: ClientRuntime,
        device: torch.device,
        max_stack: int = 0,
        workers: int = 1,
    ) -> None:
        if cfg.clock != "virtual":
            raise ValueError(
                "executor='batched' needs clock='virtual' (a stack has no "
                "per-job wall time); use executor='processes' with clock='wall'"
            )
        stack_kernels(cfg).check_device(device)  # before worker processes start
        self.cfg, self.device = cfg, device
        self.max_stack = max_stack or AUTO_STACK.get(device.type, 16)
        self.workers = workers if device.type == "cpu" else 1
        self._sizes = [len(p) for p in data_for(cfg).partition.indices]
        self._pending: list[Job] = []
        self._ready: list[Reply] = []
        self._trainer: StackTrainer | None = None
        self._pool: WorkerPool | None = None
        if self.workers > 1:
            self._pool = WorkerPool(cfg, self.workers, "stacks")
        else:
            self._trainer = StackTrainer(cfg, runtime, device)

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Block until the worker processes (if any) have loaded the data."""
        if self._pool is not None:
            self._pool.wait_ready(timeout)

    def submit(self, job: Job) -> None:
        """Queue ``job`` for the next stacks."""
        if not 0 <= job.cid < len(self._sizes):
            raise ValueError(f"partition id {job.cid} out of range 0..{len(self._sizes) - 1}")
        self._pending.append(job)

    def collect(self, timeout: float) -> list[Reply]:
        """Train every outstanding job (unless replies are ready) and return the replies.

        ``timeout`` is not used: this computes rather than waits. With worker
        processes the wait for their stacks ends with :class:`ExecutorError`
        when none finishes within ``job-timeout`` seconds.
        """
        if not self._ready and self._pending:
            jobs, self._pending = self._pending, []
            batches = [min(self.cfg.batch_size, self._sizes[j.cid]) for j in jobs]
            stacks = [
                [jobs[i] for i in s] for s in plan_stacks(batches, self.max_stack, self.workers)
            ]
            if self._pool is None:
                assert self._trainer is not None
                self._ready = [r for stack in stacks for r in self._trainer.train_safely(stack)]
            else:
                self._ready = self._train_in_pool(self._pool, stacks)
        out, self._ready = self._ready, []
        return out

    def _train_in_pool(self, pool: WorkerPool, stacks: list[list[Job]]) -> list[Reply]:
        for k, stack in enumerate(stacks):
            pool.put(k, stack)
        done: dict[int, list[Reply]] = {}
        while pool.pending():
            got = pool.results(timeout=self.cfg.job_timeout)
            if not got:
                raise ExecutorError(
                    f"no stack finished within job-timeout="
                    f"{self.cfg.job_timeout:g} s; a worker hangs"
                )
            done.update((int(k), replies) for k, replies in got)  # type: ignore[call-overload]
        return [r for k in range(len(stacks)) for r in done[k]]

    def cancel(self, cid: int) -> None:
        """Drop ``cid``'s queued job or unreturned reply."""
        self._pending = [j for j in self._pending if j.cid != cid]
        self._ready = [r for r in self._ready if r.cid != cid]

    def outstanding(self) -> int:
        """Jobs queued plus replies not yet returned."""
        return len(self._pending) + len(self._ready)

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak memory of this process and the workers (and the device's peak on CUDA)."""
        out = {"main": self_peak_rss_kb()} if self._pool is None else self._pool.peak_rss_kb()
        if self.device.type == "cuda":
            out["cuda"] = int(torch.cuda.max_memory_allocated(self.device) // 1024)
        return out

    def close(self) -> None:
        """Drop queued jobs, stop the workers, free the device copy of the data."""
        self._pending.clear()
        self._ready.clear()
        if self._pool is not None:
            self._pool.close()
        if self._trainer is not None:
            self._trainer.release()

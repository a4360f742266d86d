"""A pool of worker processes that compute client jobs, or stacks of them, for the executors.

Every worker builds one ``ClientRuntime`` for the run configuration and
loads the training set once (``data_for`` is memoised per process), then
takes tasks from one shared queue until it is stopped. A task is either one
:class:`~fl_r2sp.fl.protocol.Job` (``kind="jobs"``: ``ClientRuntime.run``) or a
list of jobs trained as one stacked model on the CPU (``kind="stacks"``:
:class:`~fl_r2sp.fl.server.executor.stack_trainer.StackTrainer`). A task's result is a
pure function of the task and the torch thread count, so it does not depend
on the pool size or on which worker ran it.

Workers start from a ``forkserver`` (``spawn`` where there is none): never a
plain ``fork`` of a process that may already run torch thread pools. Every
wait is bounded: :meth:`WorkerPool.results` waits in short slices and checks
between them that every worker is alive, so a killed worker (out of memory,
a crash) surfaces as an :class:`ExecutorError` naming it.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
import time
import traceback
from collections.abc import Callable, Hashable
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server.executor.base import ExecutorError, error_reply, self_peak_rss_kb

#: Seconds between liveness checks while waiting for results.
POLL_SLICE_S = 0.1
#: Seconds a worker waits for a task before checking that its parent still lives.
PARENT_CHECK_S = 5.0
#: Seconds :meth:`WorkerPool.close` waits for a worker to exit after SIGTERM.
JOIN_TIMEOUT_S = 5.0


def _compute_fn(cfg: RunConfig, kind: str) -> Callable[[Any], Any]:
    """The worker's task function (imports here: the worker's own process)."""
    from fl_r2sp.fl.clients.runtime import ClientRuntime, data_for

    runtime = ClientRuntime(cfg)  # fixes torch's thread count to cfg.torch_threads
    if kind == "stacks":
        import torch

        from fl_r2sp.fl.server.executor.stack_trainer import StackTrainer

        trainer = StackTrainer(cfg, runtime, torch.device("cpu"))
        return trainer.train_safely
    if not cfg.timing_only:
        data_for(cfg)  # the training set, once per process
    sleep = cfg.clock == "wall"

    def run_job(job: Any) -> Any:
        try:
            return runtime.run(job, sleep)
        except Exception as exc:  # a failing client must not kill the pool
            return error_reply(job, exc)

    return run_job


def _worker_main(
    cfg: RunConfig, kind: str, wid: int, tasks: Queue[Any], results: Queue[Any]
) -> None:
    """Entry point of worker ``wid``: set up, then compute tasks until ``None``."""
    try:
        import torch

        torch.set_num_interop_threads(1)
        compute = _compute_fn(cfg, kind)
    except BaseException:
        results.put(("fatal", wid, None, traceback.format_exc()))
        return
    results.put(("ready", wid, None, self_peak_rss_kb()))
    # The process that started this worker (with a forkserver, not the OS parent).
    parent = mp.parent_process()
    while True:
        try:
            task = tasks.get(timeout=PARENT_CHECK_S)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # orphaned: the executor's process is gone
            continue
        if task is None:
            return
        key, payload = task
        result = compute(payload)
        results.put(("done", wid, (key, result), self_peak_rss_kb()))


def _start_context(method: str | None) -> Any:
    if method is None:
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    if method not in ("forkserver", "spawn"):
        raise ValueError(f"start method {method!r}: use 'forkserver' or 'spawn', never 'fork'")
    ctx = mp.get_context(method)
    if method == "forkserver":
        # Workers fork from a server that imported torch and the runtime once;
        # torch.optim imports torch._dynamo (~900 modules, seconds) on first use.
        ctx.set_forkserver_preload(
            ["fl_r2sp.fl.server.executor.pool", "fl_r2sp.fl.clients.runtime", "torch._dynamo"]
        )
    return ctx


class WorkerPool:
    """``workers`` processes computing tasks of one ``kind``; results as they finish.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration (each worker builds its runtime from it).
    workers : int
        Number of worker processes (>= 1).
    kind : str (default: "jobs")
        ``"jobs"`` (a task is one Job, the result its Reply) or ``"stacks"``
        (a task is a list of Jobs, the result their Replies).
    start_method : str or None (default: None)
        ``forkserver`` (default where available) or ``spawn``.
    """

    def __init__(
        self, cfg: RunConfig, workers: int, kind: str = "jobs", start_method: str | None = None
    ) -> None:
        if workers < 1:
            raise ValueError(f"need at least one worker process, got {workers}")
        if kind not in ("jobs", "stacks"):
            raise ValueError(f"kind={kind!r}: 'jobs' or 'stacks'")
        ctx = _start_context(start_method)
        self._tasks: Queue[Any] = ctx.Queue()
        self._results: Queue[Any] = ctx.Queue()
        self._procs: list[BaseProcess] = []
        self._open: set[Hashable] = set()  # keys put and not yet returned
        self._rss: dict[str, int] = {}
        self._ready: set[int] = set()
        self._early: list[tuple[Hashable, Any]] = []  # results read during wait_ready
        self.closed = False
        for wid in range(workers):
            proc = ctx.Process(
                target=_worker_main,
                name=f"fl-r2sp-{kind}-{wid}",
                daemon=True,
                args=(cfg, kind, wid, self._tasks, self._results),
            )
            proc.start()
            self._procs.append(proc)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers, in worker order."""
        return [int(p.pid or 0) for p in self._procs]

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Block until every worker has set up (runtime built, data loaded).

        Not needed for correctness (tasks queue up meanwhile); it separates
        the start-up cost from the compute time and surfaces start-up errors
        early. Raises :class:`ExecutorError` after ``timeout`` s.
        """
        deadline = time.monotonic() + timeout
        while len(self._ready) < len(self._procs):
            if time.monotonic() > deadline:
                raise ExecutorError(f"executor workers not ready after {timeout:g} s")
            self._early += self._read(POLL_SLICE_S)

    def put(self, key: Hashable, payload: Any) -> None:
        """Queue a task (returns at once); ``key`` comes back with its result."""
        if self.closed:
            raise ExecutorError("the worker pool is closed")
        self._check_alive()
        self._open.add(key)
        self._tasks.put((key, payload))

    def discard(self, key: Hashable) -> None:
        """Forget task ``key``: its result, when it comes, is dropped."""
        self._open.discard(key)

    def open_keys(self) -> list[Hashable]:
        """Keys of the tasks put whose results were not yet returned."""
        return list(self._open)

    def pending(self) -> int:
        """Tasks put whose results were not yet returned."""
        return len(self._open)

    def results(self, timeout: float) -> list[tuple[Hashable, Any]]:
        """(key, result) pairs finished so far; if none, wait up to ``timeout`` s for one."""
        deadline = time.monotonic() + max(0.0, timeout)
        out, self._early = self._keep(self._early + self._read(0.0)), []
        while not out and self._open and (left := deadline - time.monotonic()) > 0:
            out = self._keep(self._read(min(POLL_SLICE_S, left)))
        return out

    def _keep(self, done: list[tuple[Hashable, Any]]) -> list[tuple[Hashable, Any]]:
        """The results still wanted (a discarded task's result is dropped)."""
        kept = [(k, r) for k, r in done if k in self._open]
        self._open.difference_update(k for k, _ in kept)
        return kept

    def _read(self, wait: float) -> list[tuple[Hashable, Any]]:
        """Every message available now (waiting up to ``wait`` s for the first)."""
        out: list[tuple[Hashable, Any]] = []
        while True:
            try:
                if wait > 0 and not out:
                    kind, wid, body, extra = self._results.get(timeout=wait)
                else:
                    kind, wid, body, extra = self._results.get_nowait()
            except queue.Empty:
                self._check_alive()
                return out
            if kind == "fatal":
                self.close()
                raise ExecutorError(f"executor worker {wid} failed to start:\n{extra}")
            name = f"worker-{wid}"
            self._rss[name] = max(self._rss.get(name, 0), int(extra))
            if kind == "ready":
                self._ready.add(wid)
            else:
                out.append(body)

    def _check_alive(self) -> None:
        for wid, proc in enumerate(self._procs):
            code = proc.exitcode
            if code is None:
                continue
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            waiting = len(self._open)
            self.close()
            raise ExecutorError(
                f"executor worker {wid} (pid {proc.pid}) died with {how} while {waiting} tasks "
                "were outstanding; the run cannot go on. A killed worker usually ran out of "
                "memory: lower executor-workers or use executor=serial"
            )

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak memory of this process and of each worker (as of its last message)."""
        return {"main": self_peak_rss_kb(), **dict(sorted(self._rss.items()))}

    def close(self) -> None:
        """Stop the workers (SIGTERM, then SIGKILL after :data:`JOIN_TIMEOUT_S`)."""
        if self.closed:
            return
        self.closed = True
        for proc in self._procs:
            if proc.exitcode is None:
                proc.terminate()
        for proc in self._procs:
            proc.join(JOIN_TIMEOUT_S)
            if proc.exitcode is None:
                proc.kill()
                proc.join(JOIN_TIMEOUT_S)
        for q in (self._tasks, self._results):
            q.cancel_join_thread()  # unread tasks must not block this process's exit
            q.close()
        self._open.clear()

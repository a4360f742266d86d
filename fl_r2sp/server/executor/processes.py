"""A pool of single-threaded worker processes, each training whole jobs.

Every worker builds one ``ClientRuntime`` for the run configuration and
loads the training set once (``data_for`` is memoised per process), then
takes jobs from one shared queue until told to stop. A job's result is a
pure function of (run seed, partition id, job index, start weights) and the
torch thread count, so it is bit-identical to the serial executor's whatever
the pool size and whichever worker ran it.

Workers start from a ``forkserver`` (``spawn`` where there is none): never a
plain ``fork`` of a process that may already run torch thread pools. Every
wait is bounded: :meth:`ProcessExecutor.collect` waits in short slices and
checks between them that every worker is alive, so a killed worker (out of
memory, a crash) surfaces as an :class:`ExecutorError` naming it.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
import time
import traceback
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any

from fl_r2sp.config import RunConfig
from fl_r2sp.protocol import Job, Reply
from fl_r2sp.server.executor.base import ExecutorError, error_reply, self_peak_rss_kb

#: Seconds between liveness checks while waiting for replies.
POLL_SLICE_S = 0.1
#: Seconds a worker waits for a job before checking that its parent still lives.
PARENT_CHECK_S = 5.0
#: Seconds :meth:`ProcessExecutor.close` waits for a worker to exit after SIGTERM.
JOIN_TIMEOUT_S = 5.0


def _worker_main(cfg: RunConfig, wid: int, tasks: Queue[Any], results: Queue[Any]) -> None:
    """Entry point of worker ``wid``: build the runtime, then run jobs until ``None``."""
    try:
        import torch

        from fl_r2sp.clients.runtime import ClientRuntime, data_for

        torch.set_num_interop_threads(1)
        runtime = ClientRuntime(cfg)  # fixes torch's thread count to cfg.torch_threads
        if not cfg.timing_only:
            data_for(cfg)  # the training set, once per process
    except BaseException:
        results.put(("fatal", wid, traceback.format_exc()))
        return
    results.put(("ready", wid, None, self_peak_rss_kb()))
    sleep = cfg.clock == "wall"
    # The process that started this worker (with a forkserver, not the OS parent).
    parent = mp.parent_process()
    while True:
        try:
            job = tasks.get(timeout=PARENT_CHECK_S)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # orphaned: the executor's process is gone
            continue
        if job is None:
            return
        try:
            reply = runtime.run(job, sleep)
        except Exception as exc:  # a failing client must not kill the pool
            reply = error_reply(job, exc)
        results.put(("reply", wid, reply, self_peak_rss_kb()))


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
            ["fl_r2sp.server.executor.processes", "fl_r2sp.clients.runtime", "torch._dynamo"]
        )
    return ctx


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
        if workers < 1:
            raise ValueError(f"need at least one worker process, got {workers}")
        ctx = _start_context(start_method)
        self._tasks: Queue[Any] = ctx.Queue()
        self._results: Queue[Any] = ctx.Queue()
        self._procs: list[BaseProcess] = []
        self._outstanding: dict[tuple[int, int], Job] = {}
        self._rss: dict[str, int] = {}
        self._ready: set[int] = set()
        self._early: list[Reply] = []  # replies that arrived during wait_ready
        self._closed = False
        for wid in range(workers):
            proc = ctx.Process(
                target=_worker_main,
                name=f"fl-r2sp-executor-{wid}",
                daemon=True,
                args=(cfg, wid, self._tasks, self._results),
            )
            proc.start()
            self._procs.append(proc)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers, in worker order."""
        return [int(p.pid or 0) for p in self._procs]

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Block until every worker has built its runtime and loaded the data.

        Not needed for correctness (jobs queue up meanwhile); it separates the
        start-up cost from the training time and surfaces start-up errors early.
        Raises :class:`ExecutorError` after ``timeout`` s.
        """
        deadline = time.monotonic() + timeout
        while len(self._ready) < len(self._procs):
            if time.monotonic() > deadline:
                raise ExecutorError(f"executor workers not ready after {timeout:g} s")
            try:
                msg = self._results.get(timeout=POLL_SLICE_S)
            except queue.Empty:
                self._check_alive()
                continue
            self._handle(msg, self._early)

    def submit(self, job: Job) -> None:
        """Queue ``job`` for the next free worker (returns at once)."""
        if self._closed:
            raise ExecutorError("the process executor is closed")
        self._check_alive()
        self._outstanding[(job.cid, job.index)] = job
        self._tasks.put(job)

    def collect(self, timeout: float) -> list[Reply]:
        """Replies finished so far; if none, wait up to ``timeout`` s for one."""
        deadline = time.monotonic() + max(0.0, timeout)
        replies, self._early = self._early + self._drain(), []
        while not replies and self._outstanding:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                msg = self._results.get(timeout=min(POLL_SLICE_S, remaining))
            except queue.Empty:
                self._check_alive()
                continue
            self._handle(msg, replies)
            replies += self._drain()
        return replies

    def _drain(self) -> list[Reply]:
        replies: list[Reply] = []
        while True:
            try:
                msg = self._results.get_nowait()
            except queue.Empty:
                return replies
            self._handle(msg, replies)

    def _handle(self, msg: tuple[Any, ...], replies: list[Reply]) -> None:
        if msg[0] == "fatal":
            self.close()
            raise ExecutorError(f"executor worker {msg[1]} failed to start:\n{msg[2]}")
        kind, wid, reply, rss = msg
        self._rss[f"worker-{wid}"] = max(self._rss.get(f"worker-{wid}", 0), int(rss))
        if kind == "ready":
            self._ready.add(wid)
            return
        # A cancelled job's reply is dropped: the loop already wrote it off.
        if self._outstanding.pop((reply.cid, reply.index), None) is not None:
            replies.append(reply)

    def _check_alive(self) -> None:
        for wid, proc in enumerate(self._procs):
            code = proc.exitcode
            if code is None:
                continue
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            waiting = sorted(self._outstanding)
            first = f" (first: client {waiting[0][0]} job {waiting[0][1]})" if waiting else ""
            self.close()
            raise ExecutorError(
                f"executor worker {wid} (pid {proc.pid}) died with {how} while "
                f"{len(waiting)} jobs were outstanding{first}; the run cannot go on. A killed "
                "worker usually ran out of memory: lower executor-workers or use executor=serial"
            )

    def cancel(self, cid: int) -> None:
        """Forget ``cid``'s outstanding job (a worker may still run it; its reply is dropped)."""
        for key in [k for k in self._outstanding if k[0] == cid]:
            del self._outstanding[key]

    def outstanding(self) -> int:
        """Jobs submitted and not yet returned."""
        return len(self._outstanding)

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak memory of this process and of each worker (as of its last reply)."""
        return {"main": self_peak_rss_kb(), **dict(sorted(self._rss.items()))}

    def close(self) -> None:
        """Stop the workers (SIGTERM, then SIGKILL after :data:`JOIN_TIMEOUT_S`)."""
        if self._closed:
            return
        self._closed = True
        for proc in self._procs:
            if proc.exitcode is None:
                proc.terminate()
        for proc in self._procs:
            proc.join(JOIN_TIMEOUT_S)
            if proc.exitcode is None:
                proc.kill()
                proc.join(JOIN_TIMEOUT_S)
        for q in (self._tasks, self._results):
            q.cancel_join_thread()  # unread jobs must not block this process's exit
            q.close()
        self._outstanding.clear()

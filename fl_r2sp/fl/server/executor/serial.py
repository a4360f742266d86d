"""The reference executor: one job at a time, in the caller's thread."""

from __future__ import annotations

from collections.abc import Callable

from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.executor.base import error_reply, self_peak_rss_kb


class SerialExecutor:
    """Runs the oldest outstanding job on each :meth:`collect` call.

    This is what the in-process runner always did; the other executors are
    checked against it.

    Parameters
    ----------
    run_job : Callable[[Job], Reply]
        Does the work (normally ``ClientRuntime.run``); exceptions become
        error replies.
    """

    def __init__(self, run_job: Callable[[Job], Reply]) -> None:
        self._run_job = run_job
        self._pending: list[Job] = []

    def submit(self, job: Job) -> None:
        """Queue ``job``."""
        self._pending.append(job)

    def collect(self, timeout: float) -> list[Reply]:
        """Run the oldest queued job and return its reply (``timeout`` is not needed)."""
        if not self._pending:
            return []
        job = self._pending.pop(0)
        try:
            return [self._run_job(job)]
        except Exception as exc:  # a failing client must not kill the server
            return [error_reply(job, exc)]

    def cancel(self, cid: int) -> None:
        """Drop ``cid``'s queued job."""
        self._pending = [j for j in self._pending if j.cid != cid]

    def outstanding(self) -> int:
        """Jobs queued."""
        return len(self._pending)

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak memory of this process."""
        return {"main": self_peak_rss_kb()}

    def close(self) -> None:
        """Drop queued jobs."""
        self._pending.clear()

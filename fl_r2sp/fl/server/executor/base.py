"""What every client-job executor offers, and the helpers they share.

An executor computes the jobs the in-process transport hands it: it accepts
jobs as soon as the loop releases them (:meth:`Executor.submit`), computes
them however it likes (one at a time, in worker processes, as one stacked
model) and hands finished replies back when asked (:meth:`Executor.collect`).
It never decides which jobs exist or in which order their results count:
that stays with the loop's virtual clock.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Protocol

from fl_r2sp.fl.protocol import Job, Reply


class ExecutorError(RuntimeError):
    """The executor itself failed (a worker process died or stopped answering)."""


class Executor(Protocol):
    """Computes client jobs; replies come back through :meth:`collect`."""

    def submit(self, job: Job) -> None:
        """Accept ``job`` (non-blocking; at most one outstanding job per client)."""
        ...

    def collect(self, timeout: float) -> list[Reply]:
        """Finished replies, waiting up to ``timeout`` s when none is ready yet.

        Executors that compute in the caller's thread (serial, batched)
        compute the next job or stack instead of waiting. Empty when nothing
        is outstanding.
        """
        ...

    def cancel(self, cid: int) -> None:
        """Drop ``cid``'s outstanding job: its reply is never returned."""
        ...

    def outstanding(self) -> int:
        """Jobs submitted whose replies were not yet returned."""
        ...

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak resident memory (KiB) of each process that computes: ``main``, ``worker-i``."""
        ...

    def close(self) -> None:
        """Release workers and memory (outstanding jobs are dropped)."""
        ...


def error_reply(job: Job, exc: BaseException) -> Reply:
    """The reply that replaces a job whose computation raised ``exc``.

    A failing client must not kill the server, as a Flower ClientApp
    exception would not: the loop rejects the reply and the policy decides.
    """
    return Reply(job.cid, job.index, job.tag, None, error=f"{type(exc).__name__}: {exc}")


def self_peak_rss_kb() -> int:
    """Peak resident set size of this process in KiB.

    Linux's ``VmHWM`` (this address space's own high-water mark) where it
    exists: ``ru_maxrss`` survives ``exec``, so a process started by a big
    parent would report the parent's peak. Pages shared with a forking
    parent (torch's, in forkserver workers) count in full, as in any RSS.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def resolve_workers(requested: int) -> int:
    """Worker count: ``requested``, or the cores this process may use when 0.

    Parameters
    ----------
    requested : int
        ``executor-workers``; 0 = one per usable core.
    """
    if requested < 0:
        raise ValueError(f"executor-workers must be >= 0, got {requested}")
    if requested > 0:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)

"""Transports: how jobs reach clients and replies come back.

A transport is non-blocking on submit and keeps at most one job in flight per
client (the loop guarantees it never submits to a busy client). Two
implementations: :class:`InProcessTransport` here (tests, fast experiments)
and ``fl_r2sp.fl.flower.grid_transport.GridTransport`` (Flower simulation and
deployments).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from fl_r2sp.fl.protocol import Job, Reply


class Transport(Protocol):
    """What the server loops need from a transport."""

    def clients(self) -> list[int]:
        """Partition ids of the reachable clients, sorted."""
        ...

    def submit(self, job: Job) -> None:
        """Send ``job`` to its client (the client must be idle)."""
        ...

    def poll(self, timeout: float) -> list[Reply]:
        """Return replies that arrived, waiting up to ``timeout`` s for one."""
        ...

    def forget(self, cid: int) -> None:
        """Stop waiting for ``cid``'s in-flight job (it timed out)."""
        ...

    def close(self) -> None:
        """Release resources (nothing outstanding is waited for)."""
        ...


class InProcessTransport:
    """Runs each job synchronously in this process with a given function.

    Replies are produced lazily in :meth:`poll`, in an order that can be
    shuffled with ``shuffle_seed`` to mimic real arrival order differing from
    virtual order (virtual-time results must not depend on it).

    Parameters
    ----------
    client_ids : Sequence[int]
        Partition ids served.
    run_job : Callable[[Job], Reply]
        Does the work (normally ``ClientRuntime.run``); exceptions become
        error replies, as a Flower ClientApp exception would.
    shuffle_seed : int or None (default: None)
        If set, ``poll`` answers a random one of the pending jobs.
    """

    def __init__(
        self,
        client_ids: Sequence[int],
        run_job: Callable[[Job], Reply],
        shuffle_seed: int | None = None,
    ) -> None:
        self._ids = sorted(int(c) for c in client_ids)
        self._run_job = run_job
        self._pending: list[Job] = []
        self._busy: set[int] = set()
        self._rng = np.random.default_rng(shuffle_seed) if shuffle_seed is not None else None

    def clients(self) -> list[int]:
        """Partition ids served."""
        return list(self._ids)

    def submit(self, job: Job) -> None:
        """Queue ``job``; raises if its client already has a job in flight."""
        if job.cid in self._busy:
            raise RuntimeError(f"client {job.cid} already has a job in flight")
        self._busy.add(job.cid)
        self._pending.append(job)

    def poll(self, timeout: float) -> list[Reply]:
        """Run one pending job and return its reply (empty if none pending)."""
        if not self._pending:
            return []
        pick = int(self._rng.integers(len(self._pending))) if self._rng is not None else 0
        job = self._pending.pop(pick)
        self._busy.discard(job.cid)
        try:
            return [self._run_job(job)]
        except Exception as exc:  # a failing client must not kill the server
            return [Reply(job.cid, job.index, job.tag, None, error=f"{type(exc).__name__}: {exc}")]

    def forget(self, cid: int) -> None:
        """Drop ``cid``'s pending job."""
        self._pending = [j for j in self._pending if j.cid != cid]
        self._busy.discard(cid)

    def close(self) -> None:
        """Drop pending jobs."""
        self._pending.clear()
        self._busy.clear()

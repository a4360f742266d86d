"""Decision tracing shared by every cluster policy.

Every policy appends one dict per decision to ``trace`` (plain JSON-able values), so that the
runtime and the twin can log them and a test can compare decision sequences. Keys present in
every entry: ``event`` and ``at`` (caller-clock seconds). Events:

* ``"permission"``: worker, iteration, batch_size (plus scheme-specific estimates, e.g. R²SP's
  ``T_active``, ``T_cycle``, ``T``, ``gap``);
* ``"hold"``: a request the policy keeps back (worker, iteration, reason);
* ``"lost"``: a worker removed by ``on_worker_lost``;
* scheme-specific events (``"tune"``, ``"round"``, ``"absorb"``, ``"discard"``).
"""

from __future__ import annotations

from typing import Any

from fl_r2sp.cluster.policies.common.base import CoordinatorPolicy, Permission, PushReport


class TracedPolicy(CoordinatorPolicy):
    """A :class:`CoordinatorPolicy` that records its decisions in :attr:`trace`."""

    def __init__(self, num_workers: int, batch_size: int) -> None:
        super().__init__(num_workers, batch_size)
        self.trace: list[dict[str, Any]] = []
        #: Completed iterations per worker (pushes seen), for the schemes that need progress.
        self.completed: dict[int, int] = dict.fromkeys(range(num_workers), 0)

    def grant(
        self, worker: int, iteration: int, at: float, batch_size: int | None = None, **extra: Any
    ) -> Permission:
        """Record and return a permission (batch size defaults to the initial one)."""
        batch = self.batch_size if batch_size is None else int(batch_size)
        self.trace.append(
            {
                "event": "permission",
                "worker": worker,
                "iteration": iteration,
                "at": float(at),
                "batch_size": batch,
                **extra,
            }
        )
        return Permission(worker, iteration, float(at), batch)

    def note(self, event: str, at: float, **fields: Any) -> None:
        """Record a non-permission decision."""
        self.trace.append({"event": event, "at": float(at), **fields})

    def start(self, now: float) -> list[Permission]:
        """Permissions for iteration 0: every live worker at ``now``."""
        return [self.grant(w, 0, now) for w in sorted(self.live)]

    def check_report(self, report: PushReport) -> bool:
        """Validate a report and count the iteration; False if it comes from a lost worker.

        Raises
        ------
        ValueError
            If the worker index is out of range, or the iteration is not the worker's next one
            (a duplicate or skipped push would silently corrupt SSP/BSP progress).
        """
        w = report.worker
        if not 0 <= w < self.num_workers:
            raise ValueError(f"push from worker {w}, but workers are 0..{self.num_workers - 1}")
        if w not in self.live:
            self.note("ignored", report.now, worker=w, iteration=report.iteration, why="lost")
            return False
        if report.iteration != self.completed[w]:
            raise ValueError(
                f"worker {w} pushed iteration {report.iteration}, expected {self.completed[w]}"
            )
        self.completed[w] = report.iteration + 1
        return True

    def on_worker_lost(self, worker: int, now: float) -> list[Permission]:
        """Forget ``worker`` and record it; subclasses add what the loss unblocks."""
        if worker in self.live:
            self.note("lost", now, worker=worker)
        self.live.discard(worker)
        return []

    def min_completed(self) -> int:
        """Fewest completed iterations among live workers (0 if none is live)."""
        return min((self.completed[w] for w in self.live), default=0)

"""What a twin run produced, and the hardware-efficiency figures derived from it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from fl_r2sp.cluster.sim.ps.spec import TwinSpec

#: Columns of :attr:`TwinResult.rows`: the telemetry ``worker_row`` fields.
ROW_FIELDS: tuple[str, ...] = (
    "worker", "iteration", "permission_s", "pull_s", "compute_s", "push_s", "blocking_s",
    "batch_size", "staleness", "loss", "t_start", "t_end",
)  # fmt: skip

#: Gaps shorter than this count as zero (two updates arriving together).
ZERO_GAP_S = 1e-3


@dataclass
class TwinResult:
    """Outcome of :func:`fl_r2sp.cluster.sim.simulate`.

    Attributes
    ----------
    spec : TwinSpec
        What was simulated.
    trace : list of dict
        The policy's decisions (``event == "permission"`` entries are the permission trace).
    rows : list of dict
        One per completed iteration, fields :data:`ROW_FIELDS`. ``permission_s`` and
        ``t_start`` are the time of the permission that started it, ``t_end`` the time its
        push reached the last shard; ``blocking_s`` is the wait from the previous request to
        that permission; ``staleness`` the updates applied since its pull (0 under BSP's
        barrier); ``loss`` is NaN (the twin does not train).
    ps_arrivals : list of (shard, worker, iteration, t)
        Time each push reached each shard.
    end_time : float
        Virtual time at which the run stopped.
    completed : dict of int to int
        Iterations completed per worker.
    discarded : list of (worker, iteration)
        Pushes the policy did not apply (SAFA's too-stale updates).
    truncated : bool
        Stopped by ``max_time`` before the iteration target.
    """

    spec: TwinSpec
    trace: list[dict[str, Any]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    ps_arrivals: list[tuple[int, int, int, float]] = field(default_factory=list)
    end_time: float = 0.0
    completed: dict[int, int] = field(default_factory=dict)
    discarded: list[tuple[int, int]] = field(default_factory=list)
    truncated: bool = False

    def add_row(
        self,
        worker: int,
        iteration: int,
        t_perm: float,
        pull_s: float,
        compute_s: float,
        push_s: float,
        blocking_s: float,
        batch_size: int,
        staleness: int,
        t_end: float,
    ) -> None:
        """Append one iteration's row."""
        values = (
            worker,
            iteration,
            t_perm,
            pull_s,
            compute_s,
            push_s,
            blocking_s,
            batch_size,
            staleness,
            math.nan,
            t_perm,
            t_end,
        )
        self.rows.append(dict(zip(ROW_FIELDS, values, strict=True)))

    def permissions(self) -> list[dict[str, Any]]:
        """The permission entries of the trace, in issue order."""
        return [e for e in self.trace if e["event"] == "permission"]

    def gaps(self, skip: int = 0) -> np.ndarray:
        """Inter-update gaps at each shard (pooled), over pushes of iterations >= ``skip``."""
        out: list[np.ndarray] = []
        for s in range(self.spec.num_servers):
            t = np.sort([a[3] for a in self.ps_arrivals if a[0] == s and a[2] >= skip])
            if t.size > 1:
                out.append(np.diff(t))
        return np.concatenate(out) if out else np.zeros(0)

    def zero_gap_fraction(self, skip: int = 0, tol: float = ZERO_GAP_S) -> float:
        """Fraction of inter-update gaps below ``tol`` seconds (NaN if there are none)."""
        g = self.gaps(skip)
        return float(np.mean(g < tol)) if g.size else math.nan

    def cycles(self, skip: int = 1) -> dict[int, float]:
        """Per worker, the mean time between consecutive permissions from iteration ``skip``.

        This is the worker's iteration time including blocking (1 / its iteration throughput).
        Workers with fewer than two such iterations are left out.
        """
        starts: dict[int, list[float]] = {}
        for r in self.rows:
            if r["iteration"] >= skip:
                starts.setdefault(r["worker"], []).append(r["t_start"])
        return {w: float(np.mean(np.diff(t))) for w, t in sorted(starts.items()) if len(t) > 1}

    def mean_iteration_time(self, skip: int = 1) -> float:
        """Hardware efficiency: mean over workers of their mean iteration time (s)."""
        c = self.cycles(skip)
        return float(np.mean(list(c.values()))) if c else math.nan

    def throughput(self, skip: int = 1) -> dict[int, float]:
        """Iterations per second per worker (1 / :meth:`cycles`)."""
        return {w: 1.0 / c for w, c in self.cycles(skip).items() if c > 0}

    def mean(self, column: str, skip: int = 1, worker: int | None = None) -> float:
        """Mean of a row column over iterations >= ``skip`` (optionally one worker's)."""
        v = [
            r[column]
            for r in self.rows
            if r["iteration"] >= skip and (worker is None or r["worker"] == worker)
        ]
        return float(np.mean(v)) if v else math.nan

    def summary(self, skip: int = 1) -> dict[str, float]:
        """Hardware-efficiency figures of the run (seconds, iterations/s, fractions)."""
        return {
            "mean_iteration_s": self.mean_iteration_time(skip),
            "throughput_it_s": float(sum(self.throughput(skip).values())),
            "mean_blocking_s": self.mean("blocking_s", skip),
            "mean_pull_s": self.mean("pull_s", skip),
            "mean_push_s": self.mean("push_s", skip),
            "mean_compute_s": self.mean("compute_s", skip),
            "mean_staleness": self.mean("staleness", skip),
            "max_staleness": float(max((r["staleness"] for r in self.rows), default=0)),
            "zero_gap_fraction": self.zero_gap_fraction(skip),
            "end_time_s": self.end_time,
            "iterations": float(sum(self.completed.values())),
        }

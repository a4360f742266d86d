"""What a selective-reduce trial produced, its metrics, and min/median/max over trials.

Metrics (the paper's §IV-A, plus variants where its definitions are ambiguous):

* ``sync_time_s``: mean duration of a completed synchronization (launch to end);
* ``sync_time_wait_s``: the same plus the BPAWR wait of the group (paper erratum 9: whether
  "average sync time" includes waiting is not said; both are reported);
* ``scale``: mean group size of the completed syncs;
* ``total_syncs``: syncs completed within the duration;
* ``total_iterations``: iterations completed by all workers = sum of the sizes of the completed
  syncs (an iteration ends with its synchronization);
* ``wasted_wait_s``: BPAWR-wasted wait per worker (seconds), strict "member" reading, and
  ``wasted_wait_pct`` of the duration; ``wasted_slot_s`` / ``wasted_slot_pct``: the lenient
  "slot" reading (both in :mod:`fl_r2sp.cluster.policies.reduce.waits`);
* ``waited_s``: all BPAWR-induced wait per worker; ``wait_decisions``, ``stall_rescues``,
  ``below_p_launches`` (literal reading), ``full_syncs``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec

#: Metric names of :meth:`ReduceSimResult.metrics`.
METRICS: tuple[str, ...] = (
    "sync_time_s", "sync_time_wait_s", "scale", "total_syncs", "total_iterations",
    "wasted_wait_s", "wasted_wait_pct", "wasted_slot_s", "wasted_slot_pct", "waited_s",
    "wait_decisions", "stall_rescues", "below_p_launches", "full_syncs",
)  # fmt: skip


@dataclass
class ReduceSimResult:
    """Outcome of one trial.

    Attributes
    ----------
    spec : ReduceSimSpec
        What was simulated.
    syncs : list of dict
        One per launched sync: ``group``, ``start``, ``end`` (NaN if not finished),
        ``members`` (tuple), ``weights``, ``waited_s``, ``full``, ``min_bw`` (true, bytes/s).
    trace : list of dict
        The controller's decisions.
    stats : dict
        The controller's counters (selective reduce; empty otherwise).
    bandwidth_gbps : ndarray
        The true per-worker bandwidths.
    end_time : float
        Virtual time at which the trial stopped (the duration).
    """

    spec: ReduceSimSpec
    syncs: list[dict[str, Any]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)
    bandwidth_gbps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end_time: float = 0.0

    def completed(self) -> list[dict[str, Any]]:
        """Syncs that ended within the duration."""
        return [s for s in self.syncs if s["end"] <= self.spec.duration_s]

    def metrics(self) -> dict[str, float]:
        """The metrics of the module docstring (NaN means where no sync completed)."""
        done = self.completed()
        dur = np.array([s["end"] - s["start"] for s in done])
        wait = np.array([s["waited_s"] for s in done])
        size = np.array([len(s["members"]) for s in done])
        n, duration = self.spec.num_workers, self.spec.duration_s
        wasted = self.stats.get("wasted_member_s", 0.0) / n
        slot = self.stats.get("wasted_slot_member_s", 0.0) / n
        out = {
            "sync_time_s": _mean(dur),
            "sync_time_wait_s": _mean(dur + wait),
            "scale": _mean(size),
            "total_syncs": float(len(done)),
            "total_iterations": float(size.sum()),
            "wasted_wait_s": wasted,
            "wasted_wait_pct": 100.0 * wasted / duration,
            "wasted_slot_s": slot,
            "wasted_slot_pct": 100.0 * slot / duration,
            "waited_s": self.stats.get("waited_member_s", 0.0) / n,
        }
        for key in ("wait_decisions", "stall_rescues", "below_p_launches", "full_syncs"):
            out[key] = float(self.stats.get(key, 0.0))
        return out

    def iterations_per_worker(self) -> np.ndarray:
        """Completed iterations of each worker."""
        counts = np.zeros(self.spec.num_workers, dtype=np.int64)
        for s in self.completed():
            counts[list(s["members"])] += 1
        return counts


def spread(values: Sequence[float]) -> dict[str, float]:
    """``min``, ``median``, ``max`` (and ``n``) of the finite values (NaN if none)."""
    xs = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if xs.size == 0:
        return {"min": math.nan, "median": math.nan, "max": math.nan, "n": 0.0}
    return {
        "min": float(xs.min()),
        "median": float(np.median(xs)),
        "max": float(xs.max()),
        "n": float(xs.size),
    }


def summarize_trials(
    results: Sequence[ReduceSimResult] | Sequence[Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
) -> dict[str, dict[str, float]]:
    """Metric -> min / median / max over trials (results or their ``metrics()`` dicts)."""
    rows = [r.metrics() if isinstance(r, ReduceSimResult) else r for r in results]
    return {m: spread([row[m] for row in rows]) for m in metrics}


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan

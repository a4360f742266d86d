"""Statistics of a cluster run's worker rows and PS arrivals, and reading them back.

Rows may come from memory (numbers) or from the CSV files (strings, ``""`` for missing): the
readers of :mod:`fl_r2sp.telemetry.values` treat anything unreadable as missing, so a run
that ended early still summarises.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fl_r2sp.telemetry.summary import inter_update_gaps
from fl_r2sp.telemetry.values import as_float, describe, span

Row = Mapping[str, Any]
#: Gaps at most this long (s) count as "zero" (updates that arrive back to back).
ZERO_GAP_S = 1e-3


def shard_gaps(ps_rows: Iterable[Row]) -> dict[int, np.ndarray]:
    """Per PS shard, the gaps between consecutive update arrivals (time order)."""
    times: dict[int, list[float]] = defaultdict(list)
    for row in ps_rows:
        shard, t = as_float(row.get("shard")), as_float(row.get("t"))
        if shard is not None and t is not None:
            times[int(shard)].append(t)
    return {s: inter_update_gaps(ts) for s, ts in sorted(times.items())}


def gap_stats(ps_rows: Iterable[Row], zero_gap_s: float = ZERO_GAP_S) -> dict[str, Any]:
    """Gap count, mean, median and the fraction of gaps <= ``zero_gap_s``, pooled over shards.

    Parameters
    ----------
    ps_rows : iterable of mapping
        Rows with ``shard`` and ``t`` (s).
    zero_gap_s : float, default 1e-3
        Largest gap counted as zero (Fig. 9 of the paper: BSP's back-to-back updates).
    """
    per_shard = list(shard_gaps(ps_rows).values())
    gaps = np.concatenate(per_shard) if per_shard else np.empty(0)
    if gaps.size == 0:
        return {"gap_count": 0, "gap_mean_s": None, "gap_median_s": None, "zero_gap_fraction": None}
    return {
        "gap_count": int(gaps.size),
        "gap_mean_s": float(gaps.mean()),
        "gap_median_s": float(np.median(gaps)),
        "zero_gap_fraction": float(np.mean(gaps <= zero_gap_s)),
    }


def summarize(worker_rows: Sequence[Row], ps_rows: Sequence[Row]) -> dict[str, Any]:
    """Run statistics: iteration time (the paper's hardware efficiency) and its phases,
    staleness, throughput, last losses, and the PS inter-update gaps (see :func:`gap_stats`).

    ``avg_iteration_s`` is the mean of ``t_end - t_start`` over all worker iterations (blocking
    included); ``samples_per_s`` is all batch samples over the span of the rows.
    """
    out: dict[str, Any] = {"iterations": len(worker_rows)}
    out["workers"] = len({row.get("worker") for row in worker_rows})
    out.update(describe((span(r, "t_start", "t_end") for r in worker_rows), "iteration"))
    for phase in ("blocking", "pull", "compute", "push", "permission"):
        values = [as_float(r.get(f"{phase}_s")) for r in worker_rows]
        known = [v for v in values if v is not None]
        out[f"avg_{phase}_s"] = float(np.mean(known)) if known else None
    stale = [v for v in (as_float(r.get("staleness")) for r in worker_rows) if v is not None]
    out["max_staleness"] = int(max(stale)) if stale else None
    out["avg_staleness"] = float(np.mean(stale)) if stale else None
    out["samples_per_s"] = _throughput(worker_rows)
    out["last_loss"] = _last_loss(worker_rows)
    out.update(gap_stats(ps_rows))
    return out


def _throughput(rows: Sequence[Row]) -> float | None:
    starts = [v for v in (as_float(r.get("t_start")) for r in rows) if v is not None]
    ends = [v for v in (as_float(r.get("t_end")) for r in rows) if v is not None]
    samples = sum(v for v in (as_float(r.get("batch_size")) for r in rows) if v is not None)
    if not starts or not ends or max(ends) <= min(starts):
        return None
    return float(samples / (max(ends) - min(starts)))


def _last_loss(rows: Sequence[Row]) -> float | None:
    """Mean over workers of the loss of each worker's highest iteration that has one."""
    last: dict[Any, tuple[float, float]] = {}
    for row in rows:
        it, loss = as_float(row.get("iteration")), as_float(row.get("loss"))
        if it is None or loss is None:
            continue
        key = row.get("worker")
        if key not in last or it > last[key][0]:
            last[key] = (it, loss)
    return float(np.mean([v for _, v in last.values()])) if last else None


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of one of the run's CSV files (values stay strings; empty file: [])."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def iterations_per_worker(worker_rows: Iterable[Row], workers: int) -> list[int]:
    """Rows (completed iterations) per worker, ``[n_0, ..., n_{N-1}]``: the summary field every
    family writes (the supervisor counts the rows flushed to ``workers.csv`` the same way)."""
    counts = [0] * workers
    for row in worker_rows:
        counts[int(row["worker"])] += 1
    return counts

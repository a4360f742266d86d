"""The phases of a client job as time intervals, and how many overlap.

A job row (see :mod:`fl_r2sp.telemetry.eventlog`) is cut into

- ``pull``  : ``dispatch -> pull_end`` (model download),
- ``train`` : ``pull_end -> train_end`` (local training),
- ``delay`` : ``train_end -> train_end + delay`` (injected delay; it ends at
  ``push_start`` at the latest),
- ``push``  : ``push_start -> push_end`` (update upload),
- ``wait``  : ``push_end -> wait_end`` (idle until the next model is sent).

A phase is emitted only when both of its ends are known. Wall-clock logs
carry only ``dispatch`` and ``push_end``; such a row yields a single ``job``
phase covering the whole round trip so that it still shows in a Gantt chart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from fl_r2sp.telemetry.values import as_float

PHASES = ("pull", "train", "delay", "push", "wait")
_EDGES = {
    "pull": ("dispatch", "pull_end"),
    "train": ("pull_end", "train_end"),
    "push": ("push_start", "push_end"),
    "wait": ("push_end", "wait_end"),
}


def job_phases(row: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """The ``(phase, start, end)`` intervals of one job row, in phase order."""
    out: list[tuple[str, float, float]] = []
    for phase in PHASES:
        if phase == "delay":
            interval = _delay_interval(row)
        else:
            a, b = (as_float(row.get(k)) for k in _EDGES[phase])
            interval = (a, b) if a is not None and b is not None and b >= a else None
        if interval is not None:
            out.append((phase, interval[0], interval[1]))
    if not any(p in ("pull", "train", "push") for p, _, _ in out):
        start, end = as_float(row.get("dispatch")), as_float(row.get("push_end"))
        if start is not None and end is not None and end >= start:
            out.insert(0, ("job", start, end))
    return out


def _delay_interval(row: Mapping[str, Any]) -> tuple[float, float] | None:
    delay = as_float(row.get("delay"))
    if delay is None or delay <= 0:
        return None
    train_end, push_start = as_float(row.get("train_end")), as_float(row.get("push_start"))
    if train_end is not None:
        end = train_end + delay
        # The delay never overlaps the push: clip at push_start when known.
        return (train_end, min(end, push_start) if push_start is not None else end)
    if push_start is not None:
        return (push_start - delay, push_start)
    return None


def max_and_mean_overlap(intervals: Sequence[tuple[float, float]]) -> tuple[int, float | None]:
    """Peak number of overlapping intervals and their time-weighted mean while any is open.

    Intervals are half-open ``[start, end)``: one that ends exactly when
    another starts does not overlap it. The mean is None when the intervals
    cover no time.
    """
    if not intervals:
        return 0, None
    starts = np.asarray([s for s, _ in intervals], dtype=float)
    ends = np.asarray([e for _, e in intervals], dtype=float)
    times = np.concatenate([ends, starts])
    steps = np.concatenate([-np.ones(ends.size), np.ones(starts.size)])
    # Sort by time, ends (-1) before starts (+1) at equal times: half-open intervals.
    order = np.lexsort((steps, times))
    times, level = times[order], np.cumsum(steps[order])
    widths = np.diff(times)
    open_ = level[:-1]
    busy = widths[open_ > 0].sum()
    mean = float((open_ * widths).sum() / busy) if busy > 0 else None
    return int(level.max()), mean


def concurrency_stats(
    jobs: Iterable[Mapping[str, Any]], phases: Sequence[str] = ("pull", "push")
) -> dict[str, float | int | None]:
    """How many clients were in each phase at once.

    Parameters
    ----------
    jobs : iterable of mapping
        Job rows of the event log.
    phases : sequence of str, default ("pull", "push")
        Phases to measure (any of :data:`PHASES`).

    Returns
    -------
    dict
        ``max_concurrent_<phase>`` (peak count) and ``mean_concurrent_<phase>``
        (time-weighted mean count over the time at least one client was in
        that phase; None if never) for each phase. Contention shows here: BSP
        pulls all models at once, FL-R²SP one group at a time.
    """
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        raise ValueError(f"unknown phases {unknown}; choose from {list(PHASES)}")
    found: dict[str, list[tuple[float, float]]] = {p: [] for p in phases}
    for row in jobs:
        for phase, start, end in job_phases(row):
            if phase in found and end > start:
                found[phase].append((start, end))
    out: dict[str, float | int | None] = {}
    for phase in phases:
        peak, mean = max_and_mean_overlap(found[phase])
        out[f"max_concurrent_{phase}"] = peak
        out[f"mean_concurrent_{phase}"] = mean
    return out

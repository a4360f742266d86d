"""Gantt chart of client phases (the paper's Fig. 16).

One horizontal lane per client, clients sorted by group then id, each job's
phases (see :mod:`fl_r2sp.telemetry.phases`) drawn as coloured bars. Drawn on
a bare :class:`matplotlib.figure.Figure` (Agg canvas), never through pyplot,
so nothing global changes and no window opens.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fl_r2sp.telemetry.phases import job_phases
from fl_r2sp.telemetry.values import as_float, span

COLOURS = {
    "pull": "#1f77b4",
    "train": "#2ca02c",
    "delay": "#ff7f0e",
    "push": "#d62728",
    "wait": "#d9d9d9",
    "job": "#7f7f7f",
}
LABELS = {"job": "round trip (phases not logged)"}


def default_window(jobs: Sequence[Mapping[str, Any]], rounds: float = 3.0) -> tuple[float, float]:
    """A window of ``rounds`` typical rounds centred on the middle of the run.

    A "round" is the median client cycle (dispatch to next dispatch of the
    same client; dispatch to update arrival when cycles are unknown): one
    round for BSP, one group round for FL-R²SP. The window is shifted to lie
    inside the run and is the whole run when no cycle is known or the run is
    shorter than the window.
    """
    starts = [t for t in (as_float(r.get("dispatch")) for r in jobs) if t is not None]
    ends = [e for r in jobs for _, _, e in job_phases(r)]
    if not starts or not ends:
        raise ValueError("no job has both a dispatch and an end time; nothing to chart")
    lo, hi = min(starts), max(ends)
    cycles = [span(r, "dispatch", "wait_end") for r in jobs]
    known = [c for c in cycles if c is not None and c > 0]
    if not known:
        trips = (span(r, "dispatch", "push_end") for r in jobs)
        known = [c for c in trips if c is not None and c > 0]
    if not known or rounds * float(np.median(known)) >= hi - lo:
        return lo, hi
    width = rounds * float(np.median(known))
    start = min(max(lo, (lo + hi) / 2 - width / 2), hi - width)
    return start, start + width


def client_order(jobs: Iterable[Mapping[str, Any]]) -> list[tuple[Any, Any]]:
    """``(group, cid)`` of every client, sorted by group (None last) then cid."""
    group: dict[Any, Any] = {}
    for row in jobs:
        cid = row.get("cid")
        if cid is not None and (cid not in group or row.get("group") not in (None, "")):
            group[cid] = row.get("group") if row.get("group") != "" else None
    key = lambda gc: (gc[0] is None, _sortable(gc[0]), _sortable(gc[1]))  # noqa: E731
    return sorted(((g, c) for c, g in group.items()), key=key)


def _sortable(value: Any) -> tuple[int, Any]:
    num = as_float(value)
    return (0, num) if num is not None else (1, str(value))


def plot_gantt(
    jobs: Sequence[Mapping[str, Any]],
    path: Path | str,
    t_from: float | None = None,
    t_to: float | None = None,
    max_clients: int = 128,
    title: str | None = None,
) -> Path:
    """Write a Gantt chart of client phases to ``path`` (PNG by extension).

    Parameters
    ----------
    jobs : sequence of mapping
        Job rows of the event log (missing times are tolerated).
    path : Path or str
        Output file.
    t_from, t_to : float, optional
        Time window; a missing end comes from :func:`default_window` (three
        median client cycles around the middle of the run).
    max_clients : int, default 128
        At most this many lanes: the first clients in group/id order.
    title : str, optional
        Figure title; default names the window.

    Returns
    -------
    Path
        ``path``.
    """
    if max_clients < 1:
        raise ValueError(f"max_clients must be >= 1, got {max_clients}")
    jobs = list(jobs)
    if t_from is None or t_to is None:
        lo, hi = default_window(jobs)
        t_from = lo if t_from is None else t_from
        t_to = hi if t_to is None else t_to
    if not t_to > t_from:
        raise ValueError(f"empty window: t_from={t_from} must be < t_to={t_to}")
    order = client_order(jobs)[:max_clients]
    lane = {cid: i for i, (_, cid) in enumerate(order)}
    bars = _bars(jobs, lane, t_from, t_to)
    fig = Figure(figsize=(10, 2 + 0.09 * len(order)), layout="constrained")
    ax = fig.add_subplot()
    for phase, (ys, lefts, widths) in bars.items():
        ax.barh(ys, widths, left=lefts, height=0.8, color=COLOURS[phase], linewidth=0)
    _decorate(ax, order, t_from, t_to)
    handles = [Patch(color=COLOURS[p], label=LABELS.get(p, p)) for p in COLOURS if p in bars]
    if handles:
        # "outside" lets the constrained layout make room below the axis label.
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    ax.set_title(title or f"client phases, t = {t_from:.2f} .. {t_to:.2f} s")
    fig.savefig(path, dpi=110)
    return Path(path)


Bars = dict[str, tuple[list[float], list[float], list[float]]]


def _bars(
    jobs: Sequence[Mapping[str, Any]], lane: dict[Any, int], t_from: float, t_to: float
) -> Bars:
    """Per phase: lanes, left ends and widths of the bars inside the window."""
    bars: Bars = defaultdict(lambda: ([], [], []))
    for row in jobs:
        y = lane.get(row.get("cid"))
        if y is None:
            continue
        for phase, start, end in job_phases(row):
            a, b = max(start, t_from), min(end, t_to)
            if b > a:  # clip to the window; drop phases outside it
                ys, lefts, widths = bars[phase]
                ys.append(y)
                lefts.append(a)
                widths.append(b - a)
    return dict(bars)


def _decorate(ax: Any, order: list[tuple[Any, Any]], t_from: float, t_to: float) -> None:
    n = len(order)
    ax.set_xlim(t_from, t_to)
    ax.set_ylim(n - 0.5, -0.5)  # first client on top
    step = max(1, int(np.ceil(n / 32)))  # at most ~32 tick labels
    ax.set_yticks(range(0, n, step), [str(order[i][1]) for i in range(0, n, step)], fontsize=7)
    for i in range(1, n):  # a line between groups
        if order[i][0] != order[i - 1][0]:
            ax.axhline(i - 0.5, color="black", linewidth=0.6)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("client (sorted by group)")

"""Run plots: accuracy vs time, Gantt chart, server egress trace, update-gap CDF.

All figures are drawn on bare :class:`matplotlib.figure.Figure` objects
(rendered by the Agg canvas on ``savefig``), never through pyplot: nothing
global changes, no window opens, and plotting is safe from worker threads.
Each ``plot_*`` function raises ValueError when it has nothing to draw;
:func:`write_run_plots` checks first and skips such plots instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fl_r2sp.telemetry.gantt import plot_gantt
from fl_r2sp.telemetry.phases import job_phases
from fl_r2sp.telemetry.summary import apply_times
from fl_r2sp.telemetry.values import as_float

__all__ = [
    "plot_accuracies",
    "plot_accuracy",
    "plot_gantt",
    "plot_gap_cdf",
    "plot_trace",
    "write_run_plots",
]

Row = Mapping[str, Any]
_GAP_LABELS = {
    "group_apply": "group applications",
    "buffer_apply": "buffer applications",
    "client_update": "asynchronous updates",
    "update_arrivals": "update arrivals",
}


def _curve(history: Iterable[Row]) -> tuple[np.ndarray, np.ndarray]:
    pts = [(as_float(h.get("time")), as_float(h.get("accuracy"))) for h in history]
    pts = sorted((t, a) for t, a in pts if t is not None and a is not None)
    return np.asarray([t for t, _ in pts]), np.asarray([a for _, a in pts])


def plot_accuracies(
    histories: Mapping[str, Iterable[Row]], path: Path | str, title: str = "test accuracy"
) -> Path:
    """Accuracy vs (virtual) time of several runs on one axis.

    Parameters
    ----------
    histories : mapping of label to evaluation rows
        Rows with ``time`` and ``accuracy``; rows lacking either are skipped.
    path : Path or str
        Output file.
    title : str, default "test accuracy"
        Figure title.
    """
    curves = {label: _curve(h) for label, h in histories.items()}
    curves = {k: v for k, v in curves.items() if v[0].size}
    if not curves:
        raise ValueError("no evaluation row has both 'time' and 'accuracy'; nothing to plot")
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    for label, (t, acc) in curves.items():
        ax.plot(t, acc, marker="." if t.size < 50 else None, label=label)
    ax.set(xlabel="time (s)", ylabel="accuracy", title=title)
    ax.grid(alpha=0.3)
    if any(label for label in curves):  # a lone unnamed run needs no legend
        ax.legend()
    fig.savefig(path, dpi=110)
    return Path(path)


def plot_accuracy(history: Iterable[Row], path: Path | str, label: str | None = None) -> Path:
    """Accuracy vs (virtual) time of one run (legend only when ``label`` is given)."""
    return plot_accuracies({label or "": history}, path)


def plot_trace(
    traces: Mapping[str, tuple[np.ndarray, np.ndarray]],
    interval: float,
    path: Path | str,
    title: str = "server egress",
) -> Path:
    """Link rate (MB/s = bytes per bin / interval / 1e6) over time, one line per trace.

    Parameters
    ----------
    traces : mapping of label to (times, bytes)
        Bin start times and bytes per bin (as ``Network.trace`` returns);
        several labels overlay, e.g. BSP and FL-R²SP for Fig. 17.
    interval : float
        Bin width in seconds (> 0).
    path : Path or str
        Output file.
    title : str, default "server egress"
        Figure title.
    """
    if not interval > 0:
        raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
    usable = {k: (np.asarray(t, float), np.asarray(b, float)) for k, (t, b) in traces.items()}
    usable = {k: v for k, v in usable.items() if v[0].size}
    if not usable:
        raise ValueError("all traces are empty; nothing to plot")
    fig = Figure(figsize=(8, 3.5), layout="constrained")
    ax = fig.add_subplot()
    for label, (t, b) in usable.items():
        ax.step(t, b / interval / 1e6, where="post", linewidth=0.8, label=label)
    ax.set(xlabel="time (s)", ylabel="MB/s", title=title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=110)
    return Path(path)


def plot_gap_cdf(
    gaps: Mapping[str, np.ndarray], path: Path | str, title: str = "inter-update gap CDF"
) -> Path:
    """Empirical CDF of the gaps between global updates, one step line per label."""
    usable = {k: np.sort(np.asarray(v, float)) for k, v in gaps.items() if np.size(v)}
    if not usable:
        raise ValueError("no gaps to plot (fewer than two updates in every run)")
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    for label, x in usable.items():
        y = np.arange(1, x.size + 1) / x.size
        # Start the curve at 0 so a single gap still draws a visible step.
        ax.step(np.concatenate(([x[0]], x)), np.concatenate(([0.0], y)), where="post", label=label)
    ax.set(xlabel="gap between global updates (s)", ylabel="fraction", title=title, ylim=(0, 1.02))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=110)
    return Path(path)


def write_run_plots(
    run_dir: Path | str,
    jobs: Sequence[Row],
    records: Sequence[Row],
    traces: Mapping[str, tuple[np.ndarray, np.ndarray]] | None,
    interval: float,
    history: Sequence[Row] | None = None,
) -> list[Path]:
    """Write ``accuracy.png``, ``gantt.png``, ``egress.png`` and ``gaps.png``.

    A plot whose data is missing is skipped: no evaluations with accuracy
    (``history``, else the ``eval`` records), no job phases, no trace whose
    name contains ``egress``, fewer than two global updates (found as in
    :func:`~fl_r2sp.telemetry.summary.apply_times`). Returns the
    files written, in that order.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    jobs, records = list(jobs), list(records)
    written: list[Path] = []
    evals = list(history) if history else [r for r in records if r.get("kind") == "eval"]
    if _curve(evals)[0].size:
        written.append(plot_accuracy(evals, run_dir / "accuracy.png"))
    if any(job_phases(r) for r in jobs):
        written.append(plot_gantt(jobs, run_dir / "gantt.png"))
    egress = {k: v for k, v in (traces or {}).items() if "egress" in k and np.size(v[0])}
    if egress:
        written.append(plot_trace(egress, interval, run_dir / "egress.png"))
    times, source = apply_times(jobs, records)
    if times.size >= 2:
        label = _GAP_LABELS.get(source, source)
        written.append(plot_gap_cdf({label: np.diff(times)}, run_dir / "gaps.png"))
    return written

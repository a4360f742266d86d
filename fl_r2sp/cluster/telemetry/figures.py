"""Figures of a cluster run: a Gantt chart of worker phases and the PS inter-update gap CDF.

Both reuse the federated side's plotting (:func:`fl_r2sp.telemetry.gantt.plot_gantt`,
:func:`fl_r2sp.telemetry.plots.plot_gap_cdf`; Agg canvas, no pyplot state): a worker
iteration becomes a "job" whose ``wait`` bar is the blocking that precedes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fl_r2sp.telemetry.gantt import plot_gantt
from fl_r2sp.telemetry.plots import plot_gap_cdf
from fl_r2sp.telemetry.values import as_float, span

from .stats import read_rows, shard_gaps

Row = Mapping[str, Any]


def job_rows(worker_rows: Sequence[Row]) -> list[dict[str, Any]]:
    """FL-style job rows (see :mod:`fl_r2sp.telemetry.phases`) for the worker iterations.

    Phases are laid end to end from ``t_start``: blocking, pull, compute ("train"), push. The
    blocking becomes its own row holding only a ``wait`` phase, so it shows before the pull.
    Rows without ``t_start`` are skipped; a missing phase duration counts as 0.
    """
    out: list[dict[str, Any]] = []
    for row in worker_rows:
        t = as_float(row.get("t_start"))
        if t is None:
            continue
        cid = int(as_float(row.get("worker")) or 0)
        d = {k: as_float(row.get(f"{k}_s")) or 0.0 for k in ("blocking", "pull", "compute", "push")}
        if d["blocking"] > 0:
            out.append({"cid": cid, "push_end": t, "wait_end": t + d["blocking"]})
        dispatch = t + d["blocking"]
        pull_end = dispatch + d["pull"]
        train_end = pull_end + d["compute"]
        out.append({"cid": cid, "dispatch": dispatch, "pull_end": pull_end,
                    "train_end": train_end, "push_start": train_end,
                    "push_end": train_end + d["push"]})  # fmt: skip
    return out


def gantt_window(worker_rows: Sequence[Row], iterations: float = 4.0) -> tuple[float, float]:
    """``iterations`` median iterations around the middle of the run (or the whole run)."""
    starts = [v for v in (as_float(r.get("t_start")) for r in worker_rows) if v is not None]
    ends = [v for v in (as_float(r.get("t_end")) for r in worker_rows) if v is not None]
    if not starts or not ends or max(ends) <= min(starts):
        raise ValueError("no worker row has a t_start before a t_end; nothing to chart")
    lo, hi = min(starts), max(ends)
    spans = [s for s in (span(r, "t_start", "t_end") for r in worker_rows) if s]
    width = iterations * float(np.median(spans)) if spans else hi - lo
    if width >= hi - lo:
        return lo, hi
    start = (lo + hi - width) / 2
    return start, start + width


def plots(run_dir: str | Path) -> list[Path]:
    """Write ``gantt.png`` and ``gaps.png`` from the CSV files in ``run_dir``.

    A figure whose data is missing is skipped (no worker iteration with times; fewer than
    two updates at every shard). Returns the files written.
    """
    run_dir = Path(run_dir)
    workers = read_rows(run_dir / "workers.csv")
    written: list[Path] = []
    jobs = job_rows(workers)
    if jobs and any(as_float(r.get("t_end")) is not None for r in workers):
        t_from, t_to = gantt_window(workers)
        title = f"worker phases (grey: blocking), t = {t_from:.2f} .. {t_to:.2f} s"
        written.append(plot_gantt(jobs, run_dir / "gantt.png", t_from, t_to, title=title))
    gaps = {f"PS {s}": g for s, g in shard_gaps(read_rows(run_dir / "ps_updates.csv")).items()}
    if any(g.size for g in gaps.values()):
        written.append(plot_gap_cdf(gaps, run_dir / "gaps.png", "inter-update gap CDF per PS"))
    return written


def plots_or_warn(run_dir: str | Path) -> list[Path]:
    """:func:`plots`, but a failure is printed, never raised: the figures are a convenience
    and must not fail a run that has written its summary. Returns the files written."""
    try:
        return plots(run_dir)
    except Exception as exc:
        print(f"[cluster] plots skipped: {type(exc).__name__}: {exc}", flush=True)
        return []

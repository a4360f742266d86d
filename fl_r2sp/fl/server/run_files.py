"""Write a finished run's folder: config, summary, history, weights, events, traces, plots.

Every file goes in through a temporary name and an atomic rename; ``summary.json`` says
``interrupted`` until the ``COMPLETE`` marker is written (:mod:`fl_r2sp.telemetry.rundir`) and
gets the real status last, so a run killed while writing leaves a folder that readers skip and
whose summary says so. The folder name is unique: a taken name gets a
``-2``, ``-3`` ... suffix (two runs finishing in the same second never share one).
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import numpy as np

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server.run_output import RunOutput
from fl_r2sp.telemetry.rundir import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    mark_complete,
    reserve_run_dir,
    staged,
)

#: Sampling interval of the server-link traces (the paper's nethogs: 100 ms).
TRACE_INTERVAL = 0.1
#: Summary figures repeated in the ``COMPLETE`` marker.
MARKER_KEYS = ("status", "stopped", "global_updates")
#: ``failure`` of a run whose folder was not finished (killed, stopped, or to be resumed).
INTERRUPTED = (
    "the run stopped before it finished (killed or interrupted; resumable if it checkpointed)"
)


def default_run_name(cfg: RunConfig) -> str:
    """``strategy-dataset-s<seed>-<YYYYmmdd-HHMMSS>`` (local time of the call)."""
    # A user's dataset is an import path: its factory's name stands in ('pkg.data:load' ->
    # 'load'), keeping ':' and '.' out of folder names.
    data = cfg.dataset.rpartition(":")[2]
    return f"{cfg.strategy}-{data}-s{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}"


def write_run_dir(
    cfg: RunConfig,
    out: RunOutput,
    run_name: str | None = None,
    directory: Path | None = None,
    complete: bool = True,
    own_data: bool = True,
) -> Path:
    """Write config, summary, history, weights, events, traces and plots; return the folder.

    The order makes a crash at any point tell the truth: ``summary.json`` first says
    ``interrupted``, then the other files, the ``COMPLETE`` marker, and the real summary
    last; so ``"status": "completed"`` is never on disk without the marker.

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration (``run_dir`` is the parent folder).
    out : RunOutput
        What the run produced.
    run_name : str or None (default: None = :func:`default_run_name`)
        Wanted folder name; a taken name gets a ``-N`` suffix.
    directory : Path or None (default: None)
        An existing folder to complete instead (a checkpointed or resumed run's).
    complete : bool (default: True)
        Write the ``COMPLETE`` marker; False for an interrupted run (readers skip its
        folder, and a checkpointed one stays resumable).
    own_data : bool (default: True)
        The run trained on the project's data: write ``partition.csv`` (False: a user's
        model and data, e.g. a stock Flower app's, of which the project knows nothing).
    """
    if directory is None:
        directory = reserve_run_dir(cfg.run_dir, run_name or default_run_name(cfg))
    mark_interrupted(cfg, directory)
    meta = {"config": cfg.to_run_config(), "seed": cfg.seed}
    atomic_write_json(directory / "config.json", meta)
    atomic_write_text(directory / "history.csv", _csv_text(out.history))
    buf = io.BytesIO()
    np.save(buf, out.weights)
    atomic_write_bytes(directory / "weights.npy", buf.getvalue())
    with staged(directory) as stage:
        out.events.write(stage)
    for link, (times, nbytes) in out.traces.items():
        text = io.StringIO()
        np.savetxt(
            text, np.column_stack([times, nbytes]), delimiter=",", header="time,bytes", comments=""
        )
        atomic_write_text(directory / f"trace-{link}.csv", text.getvalue())
    if own_data and not cfg.timing_only:  # a user's model: the project's data is not loaded
        _write_partition(cfg, directory)
    if cfg.plots:
        from fl_r2sp.telemetry.plots import write_run_plots

        with staged(directory) as stage:
            write_run_plots(
                stage, out.events.jobs, out.events.records, out.traces, TRACE_INTERVAL, out.history
            )
    if complete:
        mark_complete(directory, {k: out.summary.get(k) for k in MARKER_KEYS})
    atomic_write_json(directory / "summary.json", {**meta, "summary": out.summary})
    return directory


def write_failed_start(cfg: RunConfig, failure: str) -> Path:
    """The folder of a run that failed before training began; return it.

    E.g. partitions that never answered the partition query: the run had no loop, so the
    folder holds ``config.json``, the ``COMPLETE`` marker and ``summary.json`` (written last)
    with ``"status": "failed"``, ``failure`` (why), ``stopped`` (``"before training"``) and
    ``global_updates`` 0; no ledger, history or weights.
    """
    directory = reserve_run_dir(cfg.run_dir, default_run_name(cfg))
    meta = {"config": cfg.to_run_config(), "seed": cfg.seed}
    summary = {
        "status": "failed",
        "failure": failure,
        "stopped": "before training",
        "global_updates": 0,
    }
    atomic_write_json(directory / "config.json", meta)
    mark_complete(directory, {k: summary.get(k) for k in MARKER_KEYS})
    atomic_write_json(directory / "summary.json", {**meta, "summary": summary})
    return directory


def mark_interrupted(cfg: RunConfig, directory: Path) -> None:
    """Write a ``summary.json`` saying ``interrupted``: what a run killed from now on leaves.

    Called when a checkpointed run reserves its folder and before a run's files are written;
    the real summary replaces it last.
    """
    summary = {"status": "interrupted", "failure": INTERRUPTED}
    atomic_write_json(
        directory / "summary.json",
        {"config": cfg.to_run_config(), "seed": cfg.seed, "summary": summary},
    )


def _write_partition(cfg: RunConfig, directory: Path) -> None:
    """Per-client label histograms, realised top/smallest class shares and outlier ids.

    CSV always, PNG if plots are on. The shares are of the rows the client
    really holds (what ``paper-strict`` guarantees, and what pool exhaustion
    may move away from the drawn proportions).
    """
    from fl_r2sp.fl.clients.runtime import data_for

    data = data_for(cfg)
    hist = data.label_histograms()
    shares = data.partition.class_shares(data.train.y, hist.shape[1])
    outliers = sorted(data.partition.outlier_ids)
    header = "client,outlier,top_share,min_share," + ",".join(
        f"class_{c}" for c in range(hist.shape[1])
    )
    rows = [
        f"{i},{int(i in outliers)},{s[0]:.6f},{s[1]:.6f}," + ",".join(map(str, h))
        for i, (h, s) in enumerate(zip(hist, shares, strict=True))
    ]
    atomic_write_text(directory / "partition.csv", header + "\n" + "\n".join(rows) + "\n")
    if cfg.plots:
        from fl_r2sp.datasets.plot import plot_label_histograms

        with staged(directory) as stage:
            plot_label_histograms(hist, outliers, stage / "partition.png")


def _csv_text(rows: list[dict[str, Any]]) -> str:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    lines = [",".join(keys)] + [",".join(str(r.get(k, "")) for k in keys) for r in rows]
    return "\n".join(lines) + "\n"

"""Telemetry of cluster runs: the run directory (:class:`ClusterRunWriter`), its statistics
(:func:`summarize`) and figures (:func:`plots`: Gantt chart of worker phases, PS gap CDF)."""

from .figures import gantt_window, job_rows, plots, plots_or_warn
from .stats import (
    ZERO_GAP_S,
    gap_stats,
    iterations_per_worker,
    read_rows,
    shard_gaps,
    summarize,
)
from .writer import MARKER, PS_FIELDS, WORKER_FIELDS, ClusterRunWriter, read_json

__all__ = [
    "MARKER",
    "PS_FIELDS",
    "WORKER_FIELDS",
    "ZERO_GAP_S",
    "ClusterRunWriter",
    "gantt_window",
    "gap_stats",
    "iterations_per_worker",
    "job_rows",
    "plots",
    "plots_or_warn",
    "read_json",
    "read_rows",
    "shard_gaps",
    "summarize",
]

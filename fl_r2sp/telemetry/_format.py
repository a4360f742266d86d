"""A console block for a run summary (see :func:`format_summary`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# (label, key, unit) in display order; a line appears only when its key holds a value.
_LINES = (
    ("strategy", "strategy", ""),
    ("seed", "seed", ""),
    ("clock", "clock", ""),
    ("stopped", "stopped", ""),
    ("global updates", "global_updates", ""),
    ("final accuracy", "final_accuracy", ""),
    ("best accuracy", "best_accuracy", ""),
    ("time (run clock)", "final_time", "s"),
    ("last event time", "virtual_time_s", "s"),
    ("converged at", "converged_at", "s"),
    ("avg pull", "avg_pull_s", "s"),
    ("avg push", "avg_push_s", "s"),
    ("avg train", "avg_train_s", "s"),
    ("avg round", "avg_round_s", "s"),
    ("avg client cycle", "avg_cycle_s", "s"),
    ("avg wait for model", "avg_wait_s", "s"),
    ("avg turn wait", "avg_turn_wait_s", "s"),
    ("final T", "final_T_s", "s"),
    ("mean update gap", "mean_update_gap_s", "s"),
    ("update gap CV", "cv_update_gap", ""),
    ("peak concurrent pulls", "max_concurrent_pull", ""),
    ("server egress peak", "server_egress_peak_Bps", "B/s"),
    ("jobs", "num_jobs", ""),
    ("stragglers", "num_stragglers", ""),
    ("failed jobs", "num_failed", ""),
    ("outliers in data", "num_outliers", ""),
)


def _fmt(value: Any, unit: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if unit == "B/s":
        return f"{value / 1e6:.3f} MB/s"
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}{' ' + unit if unit else ''}"


#: Longest id list printed on the console (summary.json keeps all of them).
_MAX_LIST = 16


def _shown_policy_key(key: str, value: Any) -> bool:
    """Policy figures worth a console line: set, not the policy's name, short lists."""
    if not key.startswith("policy_") or value is None or key in ("policy_policy", "policy_version"):
        return False
    return not isinstance(value, (list, tuple)) or len(value) <= _MAX_LIST


def format_summary(summary: Mapping[str, Any]) -> str:
    """A human-readable block of the headline figures of ``summary``.

    Known keys (strategy, final accuracy, virtual time, average pull / push /
    round time, ...) come first in a fixed order; then every ``policy_*`` key
    present (outliers caught, blacklist precision/recall, ...) as is. Keys
    that are missing or None are left out, so any subset of a summary prints.
    """
    rows = [
        (label, _fmt(summary[key], unit))
        for label, key, unit in _LINES
        if summary.get(key) is not None
    ]
    rows += [
        (key.removeprefix("policy_").replace("_", " "), _fmt(value, ""))
        for key, value in summary.items()
        if _shown_policy_key(key, value)
    ]
    if not rows:
        return "run summary: (empty)"
    width = max(len(label) for label, _ in rows)
    lines = ["run summary"] + [f"  {label:<{width}} : {text}" for label, text in rows]
    return "\n".join(lines)

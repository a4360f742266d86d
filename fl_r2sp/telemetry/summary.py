"""Table IV/V style figures from a run's event log, group records and link traces.

Every function takes plain Python rows (as kept by
:class:`~fl_r2sp.telemetry.eventlog.EventLog` or read back from its files)
and returns JSON-serialisable dicts: Python floats/ints, None for a figure
that cannot be computed (no data), never NumPy scalars or NaN.

Naming: times end in ``_s`` (seconds of the run's clock: virtual in
simulation, wall in deployments), rates in ``_Bps`` (bytes per second).
``avg_round_s`` is the headline "per-round time": the mean *group round time*
(release of a group's model to collection of its fraction C, from
``group_collect`` records) when the policy keeps groups (FL-R²SP, and BSP as
one group), else the mean *client cycle* (dispatch to next dispatch of the
same client) for ASP/FedBuff, which have no rounds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from fl_r2sp.telemetry._format import format_summary
from fl_r2sp.telemetry.phases import concurrency_stats
from fl_r2sp.telemetry.values import as_flag, as_float, describe, has_text, mean_cv, span

__all__ = [
    "apply_times",
    "concurrency_stats",
    "format_summary",
    "inter_update_gaps",
    "summarize_groups",
    "summarize_jobs",
    "summarize_run",
    "trace_stats",
]

Row = Mapping[str, Any]

# (name in the summary, start field, end field) of each per-job duration.
_DURATIONS = (
    ("pull", "dispatch", "pull_end"),
    ("train", "pull_end", "train_end"),
    ("push", "push_start", "push_end"),
    ("job", "dispatch", "push_end"),
    ("wait", "push_end", "wait_end"),
    ("cycle", "dispatch", "wait_end"),
)


def summarize_jobs(jobs: Iterable[Row]) -> dict[str, Any]:
    """Per-job phase durations and counts.

    Parameters
    ----------
    jobs : iterable of mapping
        Job rows with the fields of ``eventlog.JOB_FIELDS``; any field may be
        missing, None or ``""``.

    Returns
    -------
    dict
        ``num_jobs``, ``num_stragglers`` (straggler flag set),
        ``num_failed`` (``failed`` non-empty), ``num_completed`` (not failed,
        update arrived), and ``avg_/median_/p90_<name>_s`` for name in
        pull (dispatch->pull_end), train (pull_end->train_end), delay
        (injected), push (push_start->push_end), job (dispatch->push_end),
        wait (push_end->wait_end: waiting for aggregation and the next model)
        and cycle (dispatch->wait_end). Failed jobs are counted but left out
        of the durations; a duration whose ends are unknown is skipped.
    """
    rows = list(jobs)
    ok = [r for r in rows if not has_text(r.get("failed"))]
    out: dict[str, Any] = {
        "num_jobs": len(rows),
        "num_completed": sum(as_float(r.get("push_end")) is not None for r in ok),
        "num_stragglers": sum(as_flag(r.get("straggler")) for r in rows),
        "num_failed": len(rows) - len(ok),
    }
    for name, start, end in _DURATIONS:
        out.update(describe((span(r, start, end) for r in ok), name))
    delays = (as_float(r.get("delay")) for r in ok)
    out.update(describe((d for d in delays if d is None or d >= 0), "delay"))
    return out


def _of_kind(records: Iterable[Row], kind: str) -> list[Row]:
    return [r for r in records if r.get("kind") == kind]


def _apply_time(rec: Row) -> float | None:
    """``t_apply``, else the log's ``time``, else the policy's own ``t``."""
    for key in ("t_apply", "time", "t"):
        t = as_float(rec.get(key))
        if t is not None:
            return t
    return None


def summarize_groups(records: Iterable[Row]) -> dict[str, Any]:
    """Group round times, turn waits, periods and the gap estimate T.

    Parameters
    ----------
    records : iterable of mapping
        Policy records; only kinds ``group_collect`` and ``group_apply`` are
        read. Policies without groups (ASP, FedBuff) give an empty dict.

    Returns
    -------
    dict
        ``num_group_rounds``, ``avg/median/p90_group_round_s`` (field
        ``round_time``, else ``t_collect - t_release``), ``num_applications``,
        ``num_groups``, ``avg/median/p90_turn_wait_s``, ``avg_group_period_s``
        (mean interval between consecutive applications of the same group,
        pooled over groups), ``final_T_s`` (T of the last application),
        ``mean_gap_s`` and ``cv_gap`` (inter-application gaps, all groups).
    """
    recs = list(records)
    collects, applies = _of_kind(recs, "group_collect"), _of_kind(recs, "group_apply")
    if not collects and not applies:
        return {}
    out: dict[str, Any] = {"num_group_rounds": len(collects)}
    rounds = [as_float(r.get("round_time")) for r in collects]
    rounds = [
        rt if rt is not None else span(r, "t_release", "t_collect")
        for rt, r in zip(rounds, collects, strict=True)
    ]
    out.update(describe(rounds, "group_round"))
    out["num_applications"] = len(applies)
    groups = {r.get("group") for r in applies + collects}
    out["num_groups"] = len(groups - {None, ""})
    out.update(describe((as_float(r.get("turn_wait")) for r in applies), "turn_wait"))
    out["avg_group_period_s"] = _group_period(applies)
    last_t = [as_float(r.get("T")) for r in applies if as_float(r.get("T")) is not None]
    out["final_T_s"] = last_t[-1] if last_t else None
    out["mean_gap_s"], out["cv_gap"] = mean_cv(inter_update_gaps(applies))
    return out


def _group_period(applies: Sequence[Row]) -> float | None:
    by_group: dict[Any, list[float]] = defaultdict(list)
    for rec in applies:
        t = _apply_time(rec)
        if t is not None:
            by_group[rec.get("group")].append(t)
    periods = [np.diff(np.sort(ts)) for ts in by_group.values() if len(ts) > 1]
    if not periods:
        return None
    return float(np.concatenate(periods).mean())


def inter_update_gaps(source: Iterable[Row] | Iterable[float] | np.ndarray) -> np.ndarray:
    """Intervals between consecutive global updates, in time order.

    Parameters
    ----------
    source : iterable of records, or of times
        Either policy records (update times found as in :func:`apply_times`,
        without the job-row fallback) or the update times themselves.

    Returns
    -------
    numpy.ndarray
        ``n - 1`` non-negative gaps for ``n`` updates (empty for fewer than 2).
    """
    items = list(source) if not isinstance(source, np.ndarray) else source.tolist()
    if items and isinstance(items[0], Mapping):
        return np.diff(apply_times([], items)[0])
    times = [as_float(t) for t in items]
    return np.diff(np.sort(np.asarray([t for t in times if t is not None], dtype=float)))


def apply_times(jobs: Iterable[Row], records: Iterable[Row]) -> tuple[np.ndarray, str]:
    """Sorted times of global updates and the name of their source.

    The first source with data wins: ``"group_apply"`` records (FL-R²SP,
    BSP), ``"buffer_apply"`` records (FedBuff), ``"client_update"`` records
    whose ``version`` rises (ASP: every update is applied at once), else
    ``"update_arrivals"``: ``push_end`` of non-failed, non-straggler job rows.
    """
    records = list(records)
    for kind in ("group_apply", "buffer_apply"):
        known = [t for t in (_apply_time(r) for r in _of_kind(records, kind)) if t is not None]
        if known:
            return np.sort(np.asarray(known, dtype=float)), kind
    steps = _version_steps(_of_kind(records, "client_update"))
    if steps.size:
        return steps, "client_update"
    arrivals = [
        as_float(r.get("push_end"))
        for r in jobs
        if not has_text(r.get("failed")) and not as_flag(r.get("straggler"))
    ]
    known_arrivals = np.asarray([t for t in arrivals if t is not None], dtype=float)
    return np.sort(known_arrivals), "update_arrivals"


def _version_steps(updates: Sequence[Row]) -> np.ndarray:
    """Times at which the ``version`` field first exceeds every earlier one."""
    known: list[tuple[float, float]] = []
    for r in updates:
        t, v = _apply_time(r), as_float(r.get("version"))
        if t is not None and v is not None:
            known.append((t, v))
    out: list[float] = []
    top = -math.inf
    for t, v in sorted(known):
        if v > top:
            out.append(t)
            top = v
    return np.asarray(out, dtype=float)


def trace_stats(
    times: np.ndarray, nbytes: np.ndarray, interval: float, threshold: float = 1e-6
) -> dict[str, float | None]:
    """Peak and busy-time rate and utilisation of one link's byte trace.

    Parameters
    ----------
    times : numpy.ndarray
        Start of each bin (unused beyond its length check; kept so that a
        ``(times, bytes)`` pair from ``Network.trace`` can be passed as is).
    nbytes : numpy.ndarray
        Bytes carried in each bin.
    interval : float
        Bin width in seconds (> 0); rates are ``bytes / interval``.
    threshold : float, default 1e-6
        Bytes at or below which a bin counts as idle (absorbs the rounding
        residue of integrating piecewise-constant rates).

    Returns
    -------
    dict
        ``peak_Bps``, ``mean_busy_Bps`` (mean over busy bins; None if none),
        ``mean_Bps`` (over all bins), ``utilisation`` (fraction of busy
        bins), ``total_bytes`` and ``duration_s`` (bins x interval).
    """
    if not interval > 0:
        raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
    b = np.asarray(nbytes, dtype=float)
    if np.asarray(times).shape != b.shape:
        raise ValueError(f"times and bytes differ in shape: {np.shape(times)} vs {b.shape}")
    if b.size == 0:
        return {
            "peak_Bps": None,
            "mean_busy_Bps": None,
            "mean_Bps": None,
            "utilisation": None,
            "total_bytes": 0.0,
            "duration_s": 0.0,
        }
    busy = b > threshold
    return {
        "peak_Bps": float(b.max() / interval),
        "mean_busy_Bps": float(b[busy].mean() / interval) if busy.any() else None,
        "mean_Bps": float(b.mean() / interval),
        "utilisation": float(busy.mean()),
        "total_bytes": float(b.sum()),
        "duration_s": float(b.size * interval),
    }


def summarize_run(
    jobs: Iterable[Row],
    records: Iterable[Row],
    traces: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
    interval: float = 0.1,
) -> dict[str, Any]:
    """Everything above in one flat JSON-serialisable dict.

    Parameters
    ----------
    jobs, records : iterable of mapping
        The event log's job rows and policy records.
    traces : mapping of link name to (times, bytes), optional
        Link traces; each adds ``<link>_<stat>`` keys (link name with ``-``
        turned into ``_``, e.g. ``server_egress_peak_Bps``). Default: none.
    interval : float, default 0.1
        Bin width of the traces in seconds.

    Returns
    -------
    dict
        :func:`summarize_jobs` and :func:`summarize_groups` keys,
        :func:`concurrency_stats` of pulls and pushes, ``avg_round_s`` (see
        the module docstring) with ``round_source``, ``mean_update_gap_s``,
        ``cv_update_gap`` and ``gap_source`` (see :func:`apply_times`:
        group_apply, buffer_apply, client_update or update_arrivals),
        ``virtual_time_s`` (last event time) and, when evaluations were
        logged, ``final_accuracy``, ``best_accuracy`` and ``final_time``.
    """
    jobs, records = list(jobs), list(records)
    out: dict[str, Any] = summarize_jobs(jobs)
    groups = summarize_groups(records)
    out.update(groups)
    out.update(concurrency_stats(jobs))
    if groups.get("avg_group_round_s") is not None:
        out["avg_round_s"], out["round_source"] = groups["avg_group_round_s"], "group_round"
    else:
        out["avg_round_s"], out["round_source"] = out["avg_cycle_s"], "client_cycle"
    times, source = apply_times(jobs, records)
    out["mean_update_gap_s"], out["cv_update_gap"] = mean_cv(np.diff(times))
    out["gap_source"] = source
    out.update(_eval_stats(records))
    out["virtual_time_s"] = _last_time(jobs, records)
    for link, (t, b) in (traces or {}).items():
        key = link.replace("-", "_")
        out.update({f"{key}_{k}": v for k, v in trace_stats(t, b, interval).items()})
    return out


def _eval_stats(records: Sequence[Row]) -> dict[str, float | None]:
    scored = [
        (r, acc)
        for r in _of_kind(records, "eval")
        if (acc := as_float(r.get("accuracy"))) is not None
    ]
    if not scored:
        return {}
    accs = [acc for _, acc in scored]
    return {
        "final_accuracy": accs[-1],
        "best_accuracy": max(accs),
        "final_time": as_float(scored[-1][0].get("time")),
    }


def _last_time(jobs: Sequence[Row], records: Sequence[Row]) -> float | None:
    fields = ("dispatch", "pull_end", "train_end", "push_start", "push_end", "wait_end")
    times = [as_float(r.get(k)) for r in jobs for k in fields]
    times += [as_float(r.get("time")) for r in records]
    known = [t for t in times if t is not None]
    return max(known) if known else None

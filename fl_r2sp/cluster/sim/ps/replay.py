"""Replay recorded Request-to-Proceed reports through a fresh policy (decision-sequence checks).

The runtime's coordinator and the twin must make the same decisions for the same timings. Given
the reports a run produced (in arrival order, stamped with the caller's clock), :func:`replay`
feeds them to a new policy exactly as the twin's loop does (timers that fall due strictly
before a report fire first, at their deadline; a report and a timer at the same instant: the
report first, as in the twin, where a push completes before a timer event of that time) and
returns the policy's trace, to compare with the trace the run logged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fl_r2sp.cluster.policies.common.base import PushReport
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.policies.common.trace import TracedPolicy


def replay(
    params: PSParams,
    num_workers: int,
    batch_size: int,
    reports: Sequence[PushReport],
    lost_at: Mapping[int, float] | None = None,
    start: float = 0.0,
    until: float | None = None,
) -> list[dict[str, Any]]:
    """Feed ``reports`` (and worker losses) to a new policy; return its decision trace.

    Parameters
    ----------
    params : PSParams
        Scheme and knobs.
    num_workers : int
        N >= 1.
    batch_size : int
        Initial batch size (>= 1).
    reports : sequence of PushReport
        In non-decreasing ``now`` order.
    lost_at : mapping of int to float, optional
        Worker -> time of its loss (default: none).
    start : float, default 0.0
        Caller-clock time of ``policy.start``.
    until : float, optional
        Also fire the timers due up to and including this time after the last event (default:
        none; a twin run stops at its last push, before any timer of that instant).

    Raises
    ------
    ValueError
        If the reports go back in time.
    """
    policy: TracedPolicy = params.policy(num_workers, batch_size)
    policy.start(start)
    events: list[tuple[float, int, int, PushReport | None]] = [
        (t, 0, w, None) for w, t in (lost_at or {}).items()
    ]
    events += [(r.now, 1, i, r) for i, r in enumerate(reports)]
    last = start
    for i, r in enumerate(reports):
        if r.now < last:
            raise ValueError(f"report {i} at {r.now} comes before the previous one at {last}")
        last = r.now
    for t, _, key, report in sorted(events, key=lambda e: (e[0], e[1], e[2])):
        _fire_timers(policy, t, strict=True)
        if report is None:
            policy.on_worker_lost(key, t)
        else:
            policy.on_push(report)
    if until is not None:
        _fire_timers(policy, until, strict=False)
    return policy.trace


def _fire_timers(policy: TracedPolicy, until: float, strict: bool) -> None:
    while (due := policy.next_deadline()) is not None and (
        due < until or not strict and due == until
    ):
        if not policy.on_timer(due) and policy.next_deadline() == due:
            break  # nothing released and the deadline did not move: wait for an event

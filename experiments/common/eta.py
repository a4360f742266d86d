"""Progress of an item's sweep: runs done of runs planned, and an estimate of the time left.

An item declares how many runs it will ask for (:func:`plan`); each run it gets, cached or
computed, is counted (:func:`count`), which returns the prefix of its progress line:
``[k/n]`` and, once one run has been computed in this process, ``about T left`` = the mean
wall time of the runs computed so far × the runs still to get (cached runs cost nothing, so a
resumed sweep's estimate is that of the runs it still has to make).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["count", "plan", "state"]


@dataclass
class _Sweep:
    planned: int = 0
    done: int = 0
    computed: list[float] = field(default_factory=list)


_STATE = _Sweep()


def plan(runs: int) -> None:
    """Start counting a sweep of ``runs`` runs (0 = unknown: no estimate)."""
    if runs < 0:
        raise ValueError(f"a sweep plans at least 0 runs, got {runs}")
    _STATE.planned, _STATE.done, _STATE.computed = runs, 0, []


def _span(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def count(computed_s: float | None = None) -> str:
    """Count one run (``computed_s``: its wall seconds if it was computed now, None if it came
    from the cache); return the progress prefix, e.g. ``[3/18, about 2 h 05 min left]``."""
    _STATE.done += 1
    if computed_s is not None:
        _STATE.computed.append(computed_s)
    if not _STATE.planned:
        return f"[{_STATE.done}]"
    head = f"{_STATE.done}/{_STATE.planned}"
    left = max(0, _STATE.planned - _STATE.done)
    if not _STATE.computed or not left:
        return f"[{head}]"
    mean = sum(_STATE.computed) / len(_STATE.computed)
    return f"[{head}, about {_span(mean * left)} left]"


def state() -> tuple[int, int, int]:
    """(planned, done, computed in this process) of the current sweep."""
    return _STATE.planned, _STATE.done, len(_STATE.computed)

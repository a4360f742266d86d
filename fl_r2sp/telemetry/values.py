"""Lenient readers for event-log values and small descriptive statistics.

Job rows come from memory (floats, bools, ``None``) or from ``jobs.csv``
(strings, ``""`` for missing), so every reader here accepts both and treats
anything unreadable as missing rather than raising: a run that ended early or
a failed job must still summarise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

_TRUE = {"true", "1", "yes"}


def as_float(value: Any) -> float | None:
    """``value`` as a finite float, or None when missing, empty or non-finite."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def as_flag(value: Any) -> bool:
    """Truthiness of a flag cell: ``True``, ``1`` or the strings true/1/yes."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(value)


def has_text(value: Any) -> bool:
    """True when ``value`` is a non-empty string (or any other non-None object)."""
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return str(value).strip() != ""


def span(row: Mapping[str, Any], start: str, end: str) -> float | None:
    """``row[end] - row[start]`` when both are known and the result is >= 0."""
    a, b = as_float(row.get(start)), as_float(row.get(end))
    if a is None or b is None or b < a:
        return None
    return b - a


def describe(values: Iterable[float | None], name: str) -> dict[str, float | None]:
    """``avg_<name>_s``, ``median_<name>_s`` and ``p90_<name>_s`` of the known values.

    Missing values (None) are dropped; all three are None when nothing is
    left. The 90th percentile interpolates linearly between order statistics
    (NumPy's default), so for [1, 2, 3, 4] it is 3.7.
    """
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return {f"avg_{name}_s": None, f"median_{name}_s": None, f"p90_{name}_s": None}
    return {
        f"avg_{name}_s": float(arr.mean()),
        f"median_{name}_s": float(np.median(arr)),
        f"p90_{name}_s": float(np.percentile(arr, 90)),
    }


def mean_cv(values: np.ndarray) -> tuple[float | None, float | None]:
    """Mean and coefficient of variation (population std / mean) of ``values``.

    Both are None for an empty array; the CV is None when the mean is 0.
    """
    if values.size == 0:
        return None, None
    mean = float(values.mean())
    cv = float(values.std() / mean) if mean > 0 else None
    return mean, cv

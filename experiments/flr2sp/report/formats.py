"""Cell and number formats of the FL-R²SP sections of REPORT.md.

Cells: ``mean ± std`` of an aggregated row, ours / paper with its verdict by the rules of
:mod:`experiments.common.verdicts`, Markdown tables. Numbers in prose: the mean of a column,
percentages, spans and ratios, each ``None``-safe so a missing run reads "n/a".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from experiments.common import verdicts


def ms(row: dict | None, key: str, digits: int = 2, pct: bool = False) -> str:
    """``mean ± std`` of ``key`` in an aggregated row ('n/a' when missing)."""
    if not row or row.get(f"{key}_mean") is None:
        return "n/a"
    m, s = row[f"{key}_mean"], row.get(f"{key}_std") or 0.0
    if pct:
        return f"{100 * m:.1f}% ± {100 * s:.1f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def vs(row: dict | None, key: str, ref: float | None, item: str = "") -> str:
    """Ratio ours / paper and its verdict (fitted cells of ``item`` are marked)."""
    if not row or row.get(f"{key}_mean") is None:
        return "n/a"
    cell = (item, key, row.get("model", ""), row.get("discipline", ""))
    return verdicts.ratio_verdict(
        row[f"{key}_mean"],
        ref,
        verdicts.is_fitted(*cell),
        verdicts.partly_fitted(*cell),
        row.get("n"),
    )


def rem(row: dict | None, key: str, ref: float | None, item: str = "") -> str:
    """Verdict of reduction ``key`` against the paper's ``ref`` (sign and band, see
    :mod:`experiments.common.verdicts`), with a one-seed note from the row's ``n``."""
    if not row:
        return "n/a"
    cell = (item, key, row.get("model", ""), row.get("discipline", ""))
    return verdicts.reduction_verdict(
        row.get(f"{key}_mean"), ref, verdicts.partly_fitted(*cell), row.get("n")
    )


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def find(rows: list[dict], **keys: Any) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


Summary = dict[str, Any]


def mean(row: dict | None, key: str) -> float | None:
    """``<key>_mean`` of an aggregated row (None when missing)."""
    value = None if row is None else row.get(f"{key}_mean")
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def scaled(x: float | None, factor: float) -> float | None:
    """``x * factor``, None when ``x`` is missing."""
    return None if x is None else x * factor


def num(x: float | None, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals, or ``n/a``."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def pct(x: float | None) -> str:
    """``x`` as a percentage with one decimal, or ``n/a``."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def one(rows: Iterable[dict], **keys: Any) -> dict | None:
    """The first row whose columns equal ``keys``."""
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def span(values: Iterable[float | None], digits: int = 2, unit: str = "x") -> str:
    """``lo–hi`` (or one value) of the known values, with ``unit``."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return "n/a"
    lo, hi = f"{xs[0]:.{digits}f}", f"{xs[-1]:.{digits}f}"
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` (None when either is missing or ``b`` is zero)."""
    return None if a is None or not b else a / b

"""CSV rows and numbers as Markdown for the report's cluster sections.

Shared by :mod:`experiments.r2sp_cluster.report` and :mod:`experiments.osp.report`: reading a
published CSV (a missing file reads as no rows), one cell to four significant digits, a number
to fixed decimals, and a table in a given column order.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of ``path`` as dicts; an empty list if the file does not exist."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def cell(value: str) -> str:
    """A CSV cell for Markdown: numbers to four significant digits, empty as a dash."""
    if value in ("", "None", "nan"):
        return "–"
    try:
        x = float(value)
    except ValueError:
        return value
    return value if x.is_integer() and "." not in value else f"{x:.4g}"


def num(x: Any, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals (default two), or "n/a" if it is not a number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return f"{v:.{digits}f}"


def table_lines(rows: Sequence[Mapping[str, str]], keys: Sequence[str]) -> list[str]:
    """Markdown table of ``rows`` with the columns ``keys`` (a missing cell is a dash)."""
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    return out

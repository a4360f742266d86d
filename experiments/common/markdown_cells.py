"""CSV rows and numbers as Markdown for the report's cluster sections.

Shared by the cluster studies' reports (:mod:`experiments.r2sp_cluster.report`,
:mod:`experiments.selective.report`, :mod:`experiments.osp.report`): reading a published CSV (a
missing file reads as no rows), one cell to four significant digits, a number to fixed decimals,
a table in a given or in the file's column order, and the tally of the verdicts in a table.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
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


def short(value: Any) -> str:
    """A value for a log line or a table: floats to four significant digits, others as text."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


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


VERDICT_WORDS = (
    "reproduced",
    "same direction",
    "not reproduced",
    "differs",
    "holds",
    "does not hold",
    "undecided",
)


def md_table(rows: Sequence[Mapping[str, str]], skip: Sequence[str] = ()) -> list[str]:
    """Rows of a CSV as a Markdown table (columns in file order, ``skip`` left out)."""
    if not rows:
        return []
    keys = [k for k in rows[0] if k not in skip]
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    return out


def tally(rows: Sequence[Mapping[str, str]]) -> str:
    """How many cells of the verdict and claim columns carry each verdict."""
    seen: Counter[str] = Counter()
    for row in rows:
        # A claim row ("claim: ..." in its first column) puts its verdicts in the measure columns.
        claim_row = any(str(v).startswith("claim:") for v in row.values())
        for key, value in row.items():
            # "**not reproduced**" is bold in a table; ", one seed" or " (best: asp)" follows
            word = re.split(r"[,(]", str(value).replace("**", ""))[0].strip()
            judged = claim_row or key.startswith(("verdict", "claim")) or key == "exact"
            if judged and word in VERDICT_WORDS:
                seen[word] += 1
    return ", ".join(f"{word} {seen[word]}" for word in VERDICT_WORDS if seen[word]) or "none"

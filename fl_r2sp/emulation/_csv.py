"""Reading small numeric CSV traces with line-precise error messages."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def read_numeric_csv(
    path: str | Path, columns: tuple[str, ...]
) -> tuple[tuple[str, ...], np.ndarray]:
    """Read a CSV whose cells are all numbers.

    The first row is a header if any of its cells is not a number; it must then
    equal one of the accepted column layouts' names (``columns`` lists every
    accepted name; the header must be a subset in any order). Without a header
    the columns are taken in the order of ``columns[:width]``. Blank lines and
    lines starting with ``#`` are skipped.

    Returns
    -------
    (names, values)
        Column names and a float array of shape (rows, len(names)).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        On an empty file, an unknown column, ragged rows or a non-numeric cell.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(
            f"trace file {str(file)!r} not found (relative paths are from the working directory)"
        )
    with file.open(newline="") as handle:
        rows = [
            (n, [c.strip() for c in r])
            for n, r in enumerate(csv.reader(handle), 1)
            if r and any(c.strip() for c in r) and not r[0].strip().startswith("#")
        ]
    if not rows:
        raise ValueError(f"trace file {str(file)!r} has no data rows")
    names: tuple[str, ...]
    if any(not _is_number(c) for c in rows[0][1]):
        names = tuple(c.lower() for c in rows[0][1])
        unknown = [c for c in names if c not in columns]
        if unknown or len(set(names)) != len(names):
            raise ValueError(
                f"trace file {str(file)!r}: header {list(names)} must use columns from "
                f"{list(columns)}, once each"
            )
        rows = rows[1:]
    else:
        names = columns[: len(rows[0][1])]
    values = np.empty((len(rows), len(names)))
    for i, (line, cells) in enumerate(rows):
        if len(cells) != len(names):
            raise ValueError(
                f"trace file {str(file)!r} line {line}: {len(cells)} cells, "
                f"expected {len(names)} ({list(names)})"
            )
        for j, cell in enumerate(cells):
            if not _is_number(cell):
                raise ValueError(f"trace file {str(file)!r} line {line}: {cell!r} is not a number")
            values[i, j] = float(cell)
    if values.shape[0] == 0:
        raise ValueError(f"trace file {str(file)!r} has a header but no data rows")
    return names, values


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True

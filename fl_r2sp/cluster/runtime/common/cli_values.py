"""Flag value parsers and run-line pieces shared by the cluster CLI's scheme families.

:mod:`fl_r2sp.cluster.cli` and the families' ``cli`` modules read
comma-separated numbers the same way (:func:`parse_floats`) and the two serverless families
name their link caps the same way in their one-line run description (:func:`links_text`).
A module of its own because the scheme table imports the family modules and the CLI imports
the table, so they cannot import the CLI.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence


def parse_floats(text: str) -> tuple[float, ...]:
    """``"1,2.5,"`` -> ``(1.0, 2.5)`` (empty items skipped; "" -> ``()``).

    Raises
    ------
    argparse.ArgumentTypeError
        If an item is not a number (argparse reports it against the flag).
    """
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc


def parse_sample_cost(text: str) -> float | None:
    """``"auto"`` -> None (measured per run); a finite number of seconds > 0 -> that number.

    Raises
    ------
    argparse.ArgumentTypeError
        If ``text`` is neither "auto" nor such a number.
    """
    if text.strip().lower() == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected auto or a finite per-sample cost in seconds > 0, got {text!r}"
        )
    return value


def links_text(caps: Sequence[float]) -> str:
    """``"links <min>-<max> MB/s"`` of the given caps, or ``"links uncapped"`` when none."""
    return f"links {min(caps):g}-{max(caps):g} MB/s" if caps else "links uncapped"

"""Flag value parsers and run-line pieces shared by the cluster CLI's scheme families.

:mod:`fl_r2sp.cluster.runtime.cli` and the families' ``cli`` modules read
comma-separated numbers the same way (:func:`parse_floats`) and the two serverless families
name their link caps the same way in their one-line run description (:func:`links_text`).
A module of its own because the scheme table imports the family modules and the CLI imports
the table, so they cannot import the CLI.
"""

from __future__ import annotations

import argparse
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


def links_text(caps: Sequence[float]) -> str:
    """``"links <min>-<max> MB/s"`` of the given caps, or ``"links uncapped"`` when none."""
    return f"links {min(caps):g}-{max(caps):g} MB/s" if caps else "links uncapped"

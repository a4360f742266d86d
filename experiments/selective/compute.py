"""Ours: selective reduce's ratios against partial reduce when compute takes 1x, 3x, 10x longer.

At n = 200 on the Transformer proxy, 20 trials per point
(:func:`experiments.selective.sweeps.sweep`; setup, our choices and the verdict rules in
:mod:`experiments.selective.trials`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective import cli
from experiments.selective.sweeps import FOUR, finish, series, sweep
from experiments.selective.trials import (
    TRIALS,
)

COMPUTE_SCALES = (1.0, 3.0, 10.0)


def compute(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Ours, not in the paper: the ratios vs partial reduce when compute takes 1x, 3x, 10x."""
    rows = sweep(out, count, "compute_scale", COMPUTE_SCALES, ("partial", "selective"))
    claims = []
    for metric, what in (
        ("sync_time_s", "sync time partial/selective"),
        ("scale", "scale selective/partial"),
        ("total_iterations", "total iterations selective/partial"),
    ):
        par = series(rows, metric, "partial", COMPUTE_SCALES)
        sel = series(rows, metric, "selective", COMPUTE_SCALES)
        ratios = [
            p / s if metric == "sync_time_s" else s / p for p, s in zip(par, sel, strict=True)
        ]
        claims.append(
            {
                "figure": "(ours)",
                "claim": f"{what} at compute x1 / x3 / x10",
                "ours": " / ".join(f"{r:.3g}" for r in ratios),
                "verdict": "n/a",
            }
        )
    return finish(
        out,
        "compute",
        rows,
        claims,
        FOUR,
        "compute-time scale",
        "Ours: compute time scaled (n = 200, Transformer proxy)",
    )


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.compute``: this item alone, then write its REPORT.md."""
    cli.main({"compute": compute}, "experiments.selective.compute", __doc__, argv)


if __name__ == "__main__":
    main()

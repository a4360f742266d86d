"""Fig. 10 of the selective-reduce paper: the impact of θ.

At n = 200 on the Transformer proxy, 20 trials per point
(:func:`experiments.selective.sweeps.sweep`; setup, our choices and the verdict rules in
:mod:`experiments.selective.trials`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective import cli
from experiments.selective.sweeps import FOUR, claim_row, finish, series, sweep
from experiments.selective.trials import (
    TRIALS,
    trend,
)

THETAS = (1.0, 2.0, 5.0, 10.0, 20.0)


def fig10(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 10: θ from 1 to 20 (grid ours: 1, 2, 5, 10, 20)."""
    rows = sweep(out, count, "theta", THETAS, ("selective",))
    claims = []
    for m, d, what in (
        ("scale", "down", "scale falls"),
        ("sync_time_s", "up", "sync time grows"),
        ("total_syncs", "up", "more syncs"),
        ("total_iterations", "up", "slightly more iterations"),
    ):
        v = series(rows, m, "selective", THETAS)
        claims.append(claim_row("Fig. 10", f"larger theta -> {what}", v, trend(v, d)))
    spans = {
        m: max(v) / min(v)
        for m in FOUR
        if (v := series(rows, m, "selective", THETAS)) and min(v) > 0
    }
    claims.append(
        claim_row(
            "Fig. 10",
            "not very sensitive to theta (ours: max/min of medians <= 1.25)",
            " / ".join(f"{m} {r:.3g}" for m, r in spans.items()),
            all(r <= 1.25 for r in spans.values()),
        )
    )
    return finish(out, "fig10", rows, claims, FOUR, "theta", "Fig. 10: impact of theta (n = 200)")


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig10``: this item alone, then write its REPORT.md."""
    cli.main({"fig10": fig10}, "experiments.selective.fig10", __doc__, argv)


if __name__ == "__main__":
    main()

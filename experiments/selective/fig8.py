"""Fig. 8 of the selective-reduce paper: the impact of p (the share of a group awaited).

At n = 200 on the Transformer proxy, 20 trials per point
(:func:`experiments.selective.sweeps.sweep`; setup, our choices and the verdict rules in
:mod:`experiments.selective.trials`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.common import verdicts
from experiments.selective import cli
from experiments.selective.sweeps import FOUR, beats, claim_row, finish, series, sweep
from experiments.selective.trials import (
    TRIALS,
    median,
    trend,
)

P_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)


def fig8(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 8: p/n from 0.1 to 0.5, selective and partial reduce."""
    rows = sweep(out, count, "p_fraction", P_FRACTIONS, ("partial", "selective"))
    claims = []
    for s in ("partial", "selective"):
        for m, d, what in (
            ("scale", "up", "scale grows"),
            ("sync_time_s", "up", "sync slows"),
            ("total_syncs", "down", "fewer syncs"),
            ("total_iterations", "down", "fewer iterations"),
        ):
            v = series(rows, m, s, P_FRACTIONS)
            claims.append(claim_row("Fig. 8", f"{s}: larger p -> {what}", v, trend(v, d)))
    sel_t = series(rows, "sync_time_s", "selective", P_FRACTIONS)
    claims.append(
        claim_row(
            "Fig. 8", "selective: smallest sync time at p = 0.5n", sel_t, min(sel_t) == sel_t[-1]
        )
    )
    scale_half = median(rows, "scale", x=0.5, scheme="selective")
    claims.append(
        claim_row(
            "Fig. 8",
            "selective scale about 130 at p = 0.5n (ours / 130 within the report's band, "
            f"[{verdicts.BAND[0]:.2f}, {verdicts.BAND[1]:.2f}])",
            f"{scale_half:.4g}",
            verdicts.within(scale_half / 130),
        )
    )
    claims.append(
        claim_row(
            "Fig. 8",
            "selective beats partial in scale, sync time, iterations at every p",
            "see runs.csv",
            beats(rows, P_FRACTIONS, ("scale", "sync_time_s", "total_iterations")),
        )
    )
    return finish(out, "fig8", rows, claims, FOUR, "p / n", "Fig. 8: impact of p (n = 200)")


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig8``: this item alone, then write its REPORT.md."""
    cli.main({"fig8": fig8}, "experiments.selective.fig8", __doc__, argv)


if __name__ == "__main__":
    main()

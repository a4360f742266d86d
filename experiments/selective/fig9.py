"""Fig. 9 of the selective-reduce paper: the impact of η.

At n = 200 on the Transformer proxy, 20 trials per point
(:func:`experiments.selective.sweeps.sweep`; setup, our choices and the verdict rules in
:mod:`experiments.selective.trials`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective import cli
from experiments.selective.sweeps import FOUR, beats, claim_row, finish, series, sweep
from experiments.selective.trials import (
    TRIALS,
    trend,
)

ETAS = (0.0, 0.2, 0.4, 0.6, 0.8)


def fig9(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 9: η from 0 to 0.8 (partial reduce does not use η: its points are one baseline)."""
    rows = sweep(out, count, "eta", ETAS, ("partial", "selective"))
    scale = series(rows, "scale", "selective", ETAS)
    t = series(rows, "sync_time_s", "selective", ETAS)
    it = series(rows, "total_iterations", "selective", ETAS)
    syncs = series(rows, "total_syncs", "selective", ETAS)
    dip = min(range(len(t)), key=t.__getitem__)
    claims = [
        claim_row("Fig. 9", "scale grows with eta", scale, trend(scale, "up")),
        claim_row(
            "Fig. 9",
            "sync time first falls slightly, then grows",
            t,
            0 < dip < len(t) - 1 and t[-1] > t[dip],
        ),
        claim_row(
            "Fig. 9", "total iterations grow with eta up to 0.6", it[:-1], trend(it[:-1], "up")
        ),
        claim_row("Fig. 9", "total iterations drop at eta = 0.8", it, it[-1] < it[-2]),
        claim_row(
            "Fig. 9", "total syncs drop markedly at eta = 0.8", syncs, syncs[-1] < 0.9 * syncs[-2]
        ),
        claim_row(
            "Fig. 9",
            "selective faster and larger than partial at every eta",
            "see runs.csv",
            beats(rows, ETAS, ("scale", "sync_time_s")),
        ),
    ]
    return finish(out, "fig9", rows, claims, FOUR, "eta", "Fig. 9: impact of eta (n = 200)")


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig9``: this item alone, then write its REPORT.md."""
    cli.main({"fig9": fig9}, "experiments.selective.fig9", __doc__, argv)


if __name__ == "__main__":
    main()

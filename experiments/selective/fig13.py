"""Fig. 13 of the selective-reduce paper: the impact of the bandwidth skew λ.

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

LAMBDAS = (0.05, 0.1, 0.2)


def fig13(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 13: bandwidth skew λ ∈ {0.05, 0.1, 0.2}, all three schemes."""
    rows = sweep(out, count, "bw_lambda", LAMBDAS, ("allreduce", "partial", "selective"))
    gain = [
        p / s
        for p, s in zip(
            series(rows, "sync_time_s", "partial", LAMBDAS),
            series(rows, "sync_time_s", "selective", LAMBDAS),
            strict=True,
        )
    ]
    claims = [
        claim_row(
            "Fig. 13",
            "selective beats partial in sync time, scale, iterations at every lambda",
            "see runs.csv",
            beats(rows, LAMBDAS, ("sync_time_s", "scale", "total_iterations")),
        ),
        claim_row(
            "Fig. 13",
            "more heterogeneous bandwidth (smaller lambda) -> larger gain "
            "(sync time partial/selective)",
            gain,
            trend(gain, "down"),
        ),
    ]
    title = "Fig. 13: impact of bandwidth skew lambda (n = 200)"
    return finish(out, "fig13", rows, claims, FOUR[:3], "lambda", title)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig13``: this item alone, then write its REPORT.md."""
    cli.main({"fig13": fig13}, "experiments.selective.fig13", __doc__, argv)


if __name__ == "__main__":
    main()

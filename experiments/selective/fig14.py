"""Fig. 14 of the selective-reduce paper: the impact of the latency α.

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

ALPHAS_MS = (0.0, 1.0, 5.0, 50.0)


def fig14(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 14: latency α ∈ {0, 1, 5, 50} ms, all three schemes."""
    schemes = ("allreduce", "partial", "selective")
    rows = sweep(out, count, "alpha_s", ALPHAS_MS, schemes, scale=1e-3)
    claims, growth, added = [], {}, {}
    for s in schemes:
        t = series(rows, "sync_time_s", s, ALPHAS_MS)
        it = series(rows, "total_iterations", s, ALPHAS_MS)
        growth[s], added[s] = t[-1] / t[0], t[-1] - t[0]
        claims.append(claim_row("Fig. 14", f"{s}: sync time grows with alpha", t, trend(t, "up")))
        claims.append(
            claim_row("Fig. 14", f"{s}: total iterations fall with alpha", it, trend(it, "down"))
        )
    claims.append(
        claim_row(
            "Fig. 14",
            "sync time grows slower for partial and selective than all reduce "
            "(ours: growth ratio T(50 ms)/T(0), all / partial / selective; +seconds in brackets)",
            " / ".join(f"{growth[s]:.3g} (+{added[s]:.3g} s)" for s in schemes),
            max(growth["partial"], growth["selective"]) < growth["allreduce"],
        )
    )
    claims.append(
        claim_row(
            "Fig. 14",
            "selective's sync time grows slower than partial's (growth ratio, partial / selective)",
            [growth["partial"], growth["selective"]],
            growth["selective"] < growth["partial"],
        )
    )
    sc = series(rows, "scale", "selective", ALPHAS_MS)
    claims.append(
        claim_row(
            "Fig. 14",
            "alpha's effect on scale is trivial (ours: max/min <= 1.1)",
            sc,
            max(sc) / min(sc) <= 1.1,
        )
    )
    title = "Fig. 14: impact of latency alpha (n = 200)"
    return finish(out, "fig14", rows, claims, FOUR[:3], "alpha (ms)", title)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig14``: this item alone, then write its REPORT.md."""
    cli.main({"fig14": fig14}, "experiments.selective.fig14", __doc__, argv)


if __name__ == "__main__":
    main()

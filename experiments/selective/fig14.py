"""Fig. 14 of the selective-reduce paper: the impact of the latency α.

At n = 200 on the Transformer proxy, 20 trials per point
(:func:`experiments.selective.sweeps.sweep`; setup, our choices and the verdict rules in
:mod:`experiments.selective.trials`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    claims, times = [], {}
    for s in schemes:
        t = times[s] = series(rows, "sync_time_s", s, ALPHAS_MS)
        it = series(rows, "total_iterations", s, ALPHAS_MS)
        claims.append(claim_row("Fig. 14", f"{s}: sync time grows with alpha", t, trend(t, "up")))
        claims.append(
            claim_row("Fig. 14", f"{s}: total iterations fall with alpha", it, trend(it, "down"))
        )
    claims += growth_claims(times)
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


def growth_claims(times: Mapping[str, Sequence[float]]) -> list[dict[str, Any]]:
    """The two "grows slower" claims from each scheme's median sync time (s) along alpha.

    "Grows slower" is a claim about seconds (the paper's panel (a) plots seconds against alpha),
    not about the ratio T(50 ms)/T(0): a faster scheme's ratio grows more from less.
    """
    schemes = ("allreduce", "partial", "selective")
    added = {s: times[s][-1] - times[s][0] for s in schemes}
    growth = {s: times[s][-1] / times[s][0] for s in schemes}
    return [
        claim_row(
            "Fig. 14",
            "sync time grows slower for partial and selective than all reduce (ours: seconds "
            "added T(50 ms) - T(0), all / partial / selective; growth ratio in brackets)",
            " / ".join(f"+{added[s]:.3g} s ({growth[s]:.3g}x)" for s in schemes),
            max(added["partial"], added["selective"]) < added["allreduce"],
        ),
        claim_row(
            "Fig. 14",
            "selective's sync time grows slower than partial's (seconds added, partial / "
            "selective)",
            [added["partial"], added["selective"]],
            added["selective"] < added["partial"],
        ),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig14``: this item alone, then write its REPORT.md."""
    cli.main({"fig14": fig14}, "experiments.selective.fig14", __doc__, argv)


if __name__ == "__main__":
    main()

"""Figs. 5 and 6 of the selective-reduce paper: selective vs partial vs all reduce against n.

Fig. 5 (CNN trace) and Fig. 6 (Transformer trace): average sync time, average sync scale,
total iterations and total syncs for n ∈ {40, 80, 120, 160, 200}.
Setup, assumptions and verdict rules: :mod:`experiments.selective.trials`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective import cli
from experiments.selective.trials import (
    N_VALUES,
    PAPER_RANGES,
    SCHEMES,
    TRACES,
    TRIALS,
    claim,
    median,
    panels,
    range_verdict,
    spread_row,
    trend,
    trials,
    write_item,
)

FIGURE_OF = {"cnn": "Fig. 5", "transformer": "Fig. 6"}
_RATIO_NAMES = {
    "sync_time_s": "sync time partial/selective",
    "scale": "scale selective/partial",
    "total_iterations": "total iterations selective/partial",
}


def size_rows(out: Path, count: int = TRIALS) -> list[dict[str, Any]]:
    """min/median/max rows per trace, n and scheme (cached trials)."""
    return [
        spread_row(trials(out, scheme, n, trace, count), trace=trace, n=n, scheme=scheme)
        for trace in TRACES
        for n in N_VALUES
        for scheme in SCHEMES
    ]


def ratio(rows: list[dict[str, Any]], metric: str, trace: str, n: int) -> float:
    """Selective's improvement over partial reduce (> 1: better) at one point."""
    sel = median(rows, metric, trace=trace, n=n, scheme="selective")
    par = median(rows, metric, trace=trace, n=n, scheme="partial")
    return par / sel if metric == "sync_time_s" else sel / par


def fig5_6(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Figs. 5 and 6: the four metrics vs n, and the paper's claims."""
    rows = size_rows(out, count)
    claims: list[dict[str, Any]] = []
    for trace in TRACES:
        fig = FIGURE_OF[trace]
        for metric, (low, high) in PAPER_RANGES.items():
            ratios = [ratio(rows, metric, trace, n) for n in N_VALUES]
            best = max(ratios)
            claims.append({
                "figure": fig, "trace": trace,
                "claim": f"{_RATIO_NAMES[metric]}: up to {low}-{high}x",
                "paper": f"{low}-{high}", "ours": f"max {best:.3g} (n=40..200: "
                + " / ".join(f"{r:.3g}" for r in ratios) + ")",
                "verdict": range_verdict(metric, best, low, high),
            })  # fmt: skip
        claims += _shape_claims(rows, trace, fig)
    d = write_item(out, "fig5_6", rows, claims)
    for trace in TRACES:
        sub = [r for r in rows if r["trace"] == trace]
        panels(
            d / f"{FIGURE_OF[trace].replace('. ', '').lower()}.png",
            sub,
            "n",
            ("sync_time_s", "scale", "total_iterations", "total_syncs"),
            lambda r: r["scheme"],
            "workers n",
            f"{FIGURE_OF[trace]} ({trace} proxy): median, min-max over trials",
        )
    return {"table": claims, "figures": ["fig5.png", "fig6.png"]}


def _shape_claims(rows: list[dict[str, Any]], trace: str, fig: str) -> list[dict[str, Any]]:
    def series(scheme: str, metric: str) -> list[float]:
        return [median(rows, metric, trace=trace, n=n, scheme=scheme) for n in N_VALUES]

    def row(text: str, ours: list[float] | str, holds: bool) -> dict[str, Any]:
        shown = ours if isinstance(ours, str) else " / ".join(f"{v:.3g}" for v in ours)
        return {
            "figure": fig,
            "trace": trace,
            "claim": text,
            "paper": "stated",
            "ours": shown,
            "verdict": claim(holds),
        }

    ar, pr = series("allreduce", "sync_time_s"), series("partial", "sync_time_s")
    sel = series("selective", "sync_time_s")
    scale = series("selective", "scale")
    it_ratio = [ratio(rows, "total_iterations", trace, n) for n in N_VALUES]
    sublinear = [series(s, "total_iterations") for s in ("allreduce", "partial")]
    growth = [s[-1] / s[0] for s in sublinear]
    return [
        row("all-reduce sync time grows with n", ar, trend(ar, "up")),
        row("partial-reduce sync time grows with n", pr, trend(pr, "up")),
        row("selective-reduce sync time falls with n", sel, trend(sel, "down")),
        row(
            "selective scale above p = 0.3n at every n",
            scale,
            all(s > 0.3 * n for s, n in zip(scale, N_VALUES, strict=True)),
        ),
        row(
            "selective's total-iteration advantage shrinks as n grows",
            it_ratio,
            trend(it_ratio, "down"),
        ),
        row(
            "all-reduce and partial total iterations grow sub-linearly in n (x5 workers)",
            " / ".join(f"x{g:.3g}" for g in growth),
            all(g < N_VALUES[-1] / N_VALUES[0] for g in growth),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig5_6``: this item alone, then write its REPORT.md."""
    cli.main({"fig5_6": fig5_6}, "experiments.selective.fig5_6", __doc__, argv)


if __name__ == "__main__":
    main()

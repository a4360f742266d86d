"""The sensitivity sweeps of selective reduce (Figs. 8-10, 13, 14 and ours): one knob, many values.

All at n = 200 on the Transformer proxy, 20 trials per point (see
:mod:`experiments.selective.trials` for the setup, our choices and the verdict rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective.trials import (
    SENS_N,
    claim,
    median,
    panels,
    spread_row,
    trials,
    write_item,
)

FOUR = ("sync_time_s", "scale", "total_iterations", "total_syncs")


def sweep(
    out: Path,
    count: int,
    knob: str,
    values: Sequence[float],
    schemes: Sequence[str],
    scale: float = 1.0,
) -> list[dict[str, Any]]:
    """Rows per (value, scheme); ``knob`` is a params or spec field (value × ``scale``)."""
    return [
        spread_row(trials(out, s, SENS_N, "transformer", count, **{knob: v * scale}), x=v, scheme=s)
        for v in values
        for s in schemes
    ]


def series(
    rows: list[dict[str, Any]], metric: str, scheme: str, xs: Sequence[float]
) -> list[float]:
    return [median(rows, metric, x=x, scheme=scheme) for x in xs]


def claim_row(fig: str, text: str, ours: Sequence[float] | str, holds: bool) -> dict[str, Any]:
    shown = ours if isinstance(ours, str) else " / ".join(f"{v:.3g}" for v in ours)
    return {"figure": fig, "claim": text, "ours": shown, "verdict": claim(holds)}


def beats(rows: list[dict[str, Any]], xs: Sequence[float], metrics: Sequence[str]) -> bool:
    for m in metrics:
        sel, par = series(rows, m, "selective", xs), series(rows, m, "partial", xs)
        better = (s < p if m == "sync_time_s" else s > p for s, p in zip(sel, par, strict=True))
        if not all(better):
            return False
    return True


def finish(
    out: Path,
    item: str,
    rows: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    metrics: Sequence[str],
    xlabel: str,
    title: str,
) -> dict[str, Any]:
    d = write_item(out, item, rows, claims)
    panels(
        d / f"{item}.png",
        rows,
        "x",
        metrics,
        lambda r: r["scheme"],
        xlabel,
        title + ": median, min-max over trials",
    )
    return {"table": claims, "figures": [f"{item}.png"]}

"""Sensitivity of selective reduce: Fig. 8 (p/n), 9 (η), 10 (θ), 13 (λ), 14 (α).

All at n = 200 on the Transformer proxy, 20 trials per point (see
:mod:`experiments.selective.trials` for the setup, our choices and the verdict rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective.trials import (
    SENS_N,
    TRIALS,
    claim,
    median,
    panels,
    spread_row,
    trend,
    trials,
    write_item,
)

P_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)
ETAS = (0.0, 0.2, 0.4, 0.6, 0.8)
THETAS = (1.0, 2.0, 5.0, 10.0, 20.0)
LAMBDAS = (0.05, 0.1, 0.2)
ALPHAS_MS = (0.0, 1.0, 5.0, 50.0)
COMPUTE_SCALES = (1.0, 3.0, 10.0)
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


def _series(
    rows: list[dict[str, Any]], metric: str, scheme: str, xs: Sequence[float]
) -> list[float]:
    return [median(rows, metric, x=x, scheme=scheme) for x in xs]


def _row(fig: str, text: str, ours: Sequence[float] | str, holds: bool) -> dict[str, Any]:
    shown = ours if isinstance(ours, str) else " / ".join(f"{v:.3g}" for v in ours)
    return {"figure": fig, "claim": text, "ours": shown, "verdict": claim(holds)}


def _beats(rows: list[dict[str, Any]], xs: Sequence[float], metrics: Sequence[str]) -> bool:
    for m in metrics:
        sel, par = _series(rows, m, "selective", xs), _series(rows, m, "partial", xs)
        better = (s < p if m == "sync_time_s" else s > p for s, p in zip(sel, par, strict=True))
        if not all(better):
            return False
    return True


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
            v = _series(rows, m, s, P_FRACTIONS)
            claims.append(_row("Fig. 8", f"{s}: larger p -> {what}", v, trend(v, d)))
    sel_t = _series(rows, "sync_time_s", "selective", P_FRACTIONS)
    claims.append(
        _row("Fig. 8", "selective: smallest sync time at p = 0.5n", sel_t, min(sel_t) == sel_t[-1])
    )
    scale_half = median(rows, "scale", x=0.5, scheme="selective")
    claims.append(
        _row(
            "Fig. 8",
            "selective scale about 130 at p = 0.5n (ours within 0.8-1.25x)",
            f"{scale_half:.4g}",
            0.8 <= scale_half / 130 <= 1.25,
        )
    )
    claims.append(
        _row(
            "Fig. 8",
            "selective beats partial in scale, sync time, iterations at every p",
            "see runs.csv",
            _beats(rows, P_FRACTIONS, ("scale", "sync_time_s", "total_iterations")),
        )
    )
    return _finish(out, "fig8", rows, claims, FOUR, "p / n", "Fig. 8: impact of p (n = 200)")


def fig9(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 9: η from 0 to 0.8 (partial reduce does not use η: its points are one baseline)."""
    rows = sweep(out, count, "eta", ETAS, ("partial", "selective"))
    scale = _series(rows, "scale", "selective", ETAS)
    t = _series(rows, "sync_time_s", "selective", ETAS)
    it = _series(rows, "total_iterations", "selective", ETAS)
    syncs = _series(rows, "total_syncs", "selective", ETAS)
    dip = min(range(len(t)), key=t.__getitem__)
    claims = [
        _row("Fig. 9", "scale grows with eta", scale, trend(scale, "up")),
        _row(
            "Fig. 9",
            "sync time first falls slightly, then grows",
            t,
            0 < dip < len(t) - 1 and t[-1] > t[dip],
        ),
        _row("Fig. 9", "total iterations grow with eta up to 0.6", it[:-1], trend(it[:-1], "up")),
        _row("Fig. 9", "total iterations drop at eta = 0.8", it, it[-1] < it[-2]),
        _row(
            "Fig. 9", "total syncs drop markedly at eta = 0.8", syncs, syncs[-1] < 0.9 * syncs[-2]
        ),
        _row(
            "Fig. 9",
            "selective faster and larger than partial at every eta",
            "see runs.csv",
            _beats(rows, ETAS, ("scale", "sync_time_s")),
        ),
    ]
    return _finish(out, "fig9", rows, claims, FOUR, "eta", "Fig. 9: impact of eta (n = 200)")


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
        v = _series(rows, m, "selective", THETAS)
        claims.append(_row("Fig. 10", f"larger theta -> {what}", v, trend(v, d)))
    spans = {
        m: max(v) / min(v)
        for m in FOUR
        if (v := _series(rows, m, "selective", THETAS)) and min(v) > 0
    }
    claims.append(
        _row(
            "Fig. 10",
            "not very sensitive to theta (ours: max/min of medians <= 1.25)",
            " / ".join(f"{m} {r:.3g}" for m, r in spans.items()),
            all(r <= 1.25 for r in spans.values()),
        )
    )
    return _finish(out, "fig10", rows, claims, FOUR, "theta", "Fig. 10: impact of theta (n = 200)")


def fig13(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 13: bandwidth skew λ ∈ {0.05, 0.1, 0.2}, all three schemes."""
    rows = sweep(out, count, "bw_lambda", LAMBDAS, ("allreduce", "partial", "selective"))
    gain = [
        p / s
        for p, s in zip(
            _series(rows, "sync_time_s", "partial", LAMBDAS),
            _series(rows, "sync_time_s", "selective", LAMBDAS),
            strict=True,
        )
    ]
    claims = [
        _row(
            "Fig. 13",
            "selective beats partial in sync time, scale, iterations at every lambda",
            "see runs.csv",
            _beats(rows, LAMBDAS, ("sync_time_s", "scale", "total_iterations")),
        ),
        _row(
            "Fig. 13",
            "more heterogeneous bandwidth (smaller lambda) -> larger gain "
            "(sync time partial/selective)",
            gain,
            trend(gain, "down"),
        ),
    ]
    return _finish(
        out,
        "fig13",
        rows,
        claims,
        FOUR[:3],
        "lambda",
        "Fig. 13: impact of bandwidth skew lambda (n = 200)",
    )


def fig14(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 14: latency α ∈ {0, 1, 5, 50} ms, all three schemes."""
    schemes = ("allreduce", "partial", "selective")
    rows = sweep(out, count, "alpha_s", ALPHAS_MS, schemes, scale=1e-3)
    claims, growth, added = [], {}, {}
    for s in schemes:
        t = _series(rows, "sync_time_s", s, ALPHAS_MS)
        it = _series(rows, "total_iterations", s, ALPHAS_MS)
        growth[s], added[s] = t[-1] / t[0], t[-1] - t[0]
        claims.append(_row("Fig. 14", f"{s}: sync time grows with alpha", t, trend(t, "up")))
        claims.append(
            _row("Fig. 14", f"{s}: total iterations fall with alpha", it, trend(it, "down"))
        )
    claims.append(
        _row(
            "Fig. 14",
            "sync time grows slower for partial and selective than all reduce "
            "(ours: growth ratio T(50 ms)/T(0), all / partial / selective; +seconds in brackets)",
            " / ".join(f"{growth[s]:.3g} (+{added[s]:.3g} s)" for s in schemes),
            max(growth["partial"], growth["selective"]) < growth["allreduce"],
        )
    )
    claims.append(
        _row(
            "Fig. 14",
            "selective's sync time grows slower than partial's (growth ratio, partial / selective)",
            [growth["partial"], growth["selective"]],
            growth["selective"] < growth["partial"],
        )
    )
    sc = _series(rows, "scale", "selective", ALPHAS_MS)
    claims.append(
        _row(
            "Fig. 14",
            "alpha's effect on scale is trivial (ours: max/min <= 1.1)",
            sc,
            max(sc) / min(sc) <= 1.1,
        )
    )
    return _finish(
        out,
        "fig14",
        rows,
        claims,
        FOUR[:3],
        "alpha (ms)",
        "Fig. 14: impact of latency alpha (n = 200)",
    )


def compute(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Ours, not in the paper: the ratios vs partial reduce when compute takes 1x, 3x, 10x."""
    rows = sweep(out, count, "compute_scale", COMPUTE_SCALES, ("partial", "selective"))
    claims = []
    for metric, what in (
        ("sync_time_s", "sync time partial/selective"),
        ("scale", "scale selective/partial"),
        ("total_iterations", "total iterations selective/partial"),
    ):
        par = _series(rows, metric, "partial", COMPUTE_SCALES)
        sel = _series(rows, metric, "selective", COMPUTE_SCALES)
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
    return _finish(
        out,
        "compute",
        rows,
        claims,
        FOUR,
        "compute-time scale",
        "Ours: compute time scaled (n = 200, Transformer proxy)",
    )


def _finish(
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

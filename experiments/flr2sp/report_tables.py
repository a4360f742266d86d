"""Tables of REPORT.md, part one: the cell formats, the verdict cells, and the tables of
Tables II, IV, V and Figs. 15-17 (ours beside the paper's)."""

from __future__ import annotations

from typing import Any

from experiments.common import verdicts
from experiments.flr2sp import paper


def ms(row: dict | None, key: str, digits: int = 2, pct: bool = False) -> str:
    """``mean ± std`` of ``key`` in an aggregated row ('n/a' when missing)."""
    if not row or row.get(f"{key}_mean") is None:
        return "n/a"
    m, s = row[f"{key}_mean"], row.get(f"{key}_std") or 0.0
    if pct:
        return f"{100 * m:.1f}% ± {100 * s:.1f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def vs(row: dict | None, key: str, ref: float | None, item: str = "") -> str:
    """Ratio ours / paper and its verdict (fitted cells of ``item`` are marked)."""
    if not row or row.get(f"{key}_mean") is None:
        return "n/a"
    cell = (item, key, row.get("model", ""), row.get("discipline", ""))
    return verdicts.ratio_verdict(
        row[f"{key}_mean"], ref, verdicts.is_fitted(*cell), verdicts.partly_fitted(*cell)
    )


def rem(row: dict | None, key: str, ref: float | None, item: str = "") -> str:
    """Remaining-share verdict of reduction ``key`` (see :mod:`experiments.common.verdicts`)."""
    if not row:
        return "n/a"
    cell = (item, key, row.get("model", ""), row.get("discipline", ""))
    return verdicts.remaining_verdict(row.get(f"{key}_mean"), ref, verdicts.partly_fitted(*cell))


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def find(rows: list[dict], **keys: Any) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def sec_table2(d: dict) -> list[str]:
    rows = []
    for r in d["table"]:
        p = paper.TABLE2.get(r["model"], {})
        rows.append(
            [
                r["model"],
                r["discipline"],
                ms(r, "contended_s"),
                f"{p.get('contended_s')}",
                vs(r, "contended_s", p.get("contended_s"), "table2"),
                ms(r, "alone_s", 3),
                f"{p.get('alone_s')}",
                vs(r, "alone_s", p.get("alone_s"), "table2"),
                ms(r, "slowdown", 1),
                f"{p.get('slowdown')}",
                vs(r, "slowdown", p.get("slowdown"), "table2"),
            ]
        )
    return table(
        [
            "model",
            "server",
            "comm 128 (s)",
            "paper",
            "ratio",
            "comm 1 (s)",
            "paper",
            "ratio",
            "slowdown",
            "paper",
            "ratio",
        ],
        rows,
    )


def sec_table5(d: dict) -> list[str]:
    rows = []
    for r in d["table"]:
        p = paper.TABLE5.get(r["model"], {})
        cells = [r["model"], r["discipline"]]
        for key in ("bsp_push_s", "bsp_pull_s", "flr2sp_push_s", "flr2sp_pull_s"):
            cells += [f"{ms(r, key)} ({p.get(key)}; {vs(r, key, p.get(key), 'table5')})"]
        cells += [
            ms(r, "speedup", pct=True),
            f"{100 * p.get('speedup', 0):.1f}%",
            rem(r, "speedup", p.get("speedup"), "table5"),
            ms(r, "pull_ratio", 1),
        ]
        rows.append(cells)
    return table(
        [
            "model",
            "server",
            "BSP push (paper; ratio)",
            "BSP pull",
            "FL-R²SP push",
            "FL-R²SP pull",
            "speedup",
            "paper",
            "verdict",
            "pull BSP/FL",
        ],
        rows,
    )


def sec_table4(d: dict) -> list[str]:
    out = ["Per-round time at the paper's size (timing-only; the Table V runs):", ""]
    rows = []
    for r in d.get("round_time", []):
        p = paper.TABLE4.get(r["model"], {})
        red = 1 - p["flr2sp_round_s"] / p["bsp_round_s"] if p else None
        rows.append(
            [
                r["model"],
                r["discipline"],
                f"{ms(r, 'bsp_round_s')} ({p.get('bsp_round_s')}; "
                f"{vs(r, 'bsp_round_s', p.get('bsp_round_s'), 'table4')})",
                f"{ms(r, 'flr2sp_round_s')} ({p.get('flr2sp_round_s')}; "
                f"{vs(r, 'flr2sp_round_s', p.get('flr2sp_round_s'), 'table4')})",
                ms(r, "flr2sp_cycle_s"),
                ms(r, "round_reduction", pct=True),
                "n/a" if red is None else f"{100 * red:.1f}%",
                rem(r, "round_reduction", red, "table4"),
            ]
        )
    out += table(
        [
            "model",
            "server",
            "BSP round s (paper; ratio)",
            "FL-R²SP group round s (paper; ratio)",
            "FL-R²SP client cycle s",
            "reduction",
            "paper",
            "verdict",
        ],
        rows,
    )
    out += [
        "",
        "Convergence with real training at the run's scale (virtual seconds; conv = start "
        "of the stagnant window; tta = time to reach a fraction of the lower best accuracy, "
        "`experiments/flr2sp/table4.py` TTA_FRACTION):",
        "",
    ]
    rows = []
    for r in d["table"]:
        p = paper.TABLE4.get(r["model"], {})
        conv = "/".join(
            f"{round((r.get(k) or 0) * r['n'])}"
            for k in ("bsp_converged_mean", "flr2sp_converged_mean")
        )
        rows.append(
            [
                r["model"],
                r.get("filter", "on"),
                f"{r['n']} ({conv})",
                ms(r, "bsp_conv_s", 0),
                ms(r, "flr2sp_conv_s", 0),
                ms(r, "improvement", pct=True),
                f"{100 * p['improvement']:.1f}%" if "improvement" in p else "n/a",
                rem(r, "improvement", p.get("improvement"), "table4"),
                ms(r, "bsp_tta_s", 0),
                ms(r, "flr2sp_tta_s", 0),
                ms(r, "tta_improvement", pct=True),
                ms(r, "bsp_acc", 3),
                ms(r, "flr2sp_acc", 3),
            ]
        )
    out += table(
        [
            "model",
            "filter",
            "seeds (converged BSP/FL)",
            "BSP conv (s)",
            "FL-R²SP conv (s)",
            "improvement",
            "paper",
            "verdict",
            "BSP tta (s)",
            "FL-R²SP tta (s)",
            "tta improvement",
            "BSP final acc",
            "FL-R²SP final acc",
        ],
        rows,
    )
    return out


def sec_fig15(d: dict) -> list[str]:
    rows = [
        [
            r["model"],
            r["scheme"],
            ms(r, "final_accuracy", 3),
            ms(r, "best_accuracy", 3),
            ms(r, "converged_at", 0),
            str(r.get("n")),
        ]
        for r in d["table"]
    ]
    out = table(["model", "scheme", "final acc", "best acc", "converged at (s)", "seeds"], rows)
    if "filter_pairs" in d:  # paired by seed (newer summaries)
        from experiments.flr2sp.report_paper import filter_table

        return out + ["", *filter_table(d)]
    loss = [
        [
            x["model"],
            x["scheme"],
            f"{100 * x['loss_points']:.1f} points",
            f"{100 * x['loss_relative']:.1f}%",
            f"~{100 * paper.FIG15_FILTER_LOSS:.0f}%",
        ]
        for x in d.get("filter_loss", [])
    ]
    return (
        out
        + [
            "",
            "Final accuracy with the filter minus without (negative: the filter costs accuracy):",
            "",
        ]
        + table(
            ["model", "scheme", "gain (points)", "gain (relative)", "paper (loss without filter)"],
            loss,
        )
    )


def sec_fig16(d: dict) -> list[str]:
    rows = [
        [
            r["strategy"],
            r["discipline"],
            ms(r, "avg_pull_s"),
            ms(r, "avg_train_s"),
            ms(r, "avg_push_s"),
            ms(r, "avg_wait_s"),
            ms(r, "avg_cycle_s"),
            ms(r, "cv_update_gap", 3),
        ]
        for r in d["table"]
    ]
    return table(
        ["scheme", "server", "pull", "train+delay", "push", "wait", "cycle", "cv of update gaps"],
        rows,
    )


def sec_fig17(d: dict) -> list[str]:
    from experiments.flr2sp.fig17 import BINS

    rows = []
    for r in d["table"]:
        ref = paper.FIG17_PEAK_RATIO.get(r["model"])
        rows.append(
            [
                r["model"],
                r["discipline"],
                *(ms(r, f"peak_ratio_{w:g}s") for w in BINS),
                f"{ref or '—'}",
                vs(r, "peak_ratio_1s", ref),
            ]
        )
    return table(
        [
            "model",
            "server",
            *(f"peak ratio, {w:g} s bins" for w in BINS),
            "paper",
            "ratio (1 s bins, nethogs' refresh)",
        ],
        rows,
    )

"""Build ``experiments/REPORT.md`` from the result files: ours beside the paper's.

Reads ``<out>/<item>/summary.json`` of every item (missing items are listed
as not run), draws the summary plots (:mod:`experiments.plots`), copies the
summary CSVs and the figures worth keeping into ``experiments/report/`` and
writes the report, one section per item, with our mean ± std, the paper's
number, the ratio ours / paper, a verdict by the stated rules of
:mod:`experiments.verdicts` (cells the profile was fitted to are marked, never
called reproductions) and a reading whose every figure is computed
(:mod:`experiments.report_text`). Each section says which code version
computed its runs (``<item>/provenance.json``).

Run: ``python -m experiments.report [--out experiments/results]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from experiments import paper, provenance, verdicts
from experiments.common import rekey_runs
from experiments.plots import make_plots
from experiments.report_text import notes, scale_text

HERE = Path(__file__).resolve().parent
#: Figures copied next to the report (item -> file names in the item folder).
KEEP = {
    "table2": ["table2.png"],
    "table5": ["table5.png"],
    "fig15": ["fig15.png", "accuracy-cnn.png", "accuracy-lstm.png"],
    "fig16": [
        "gantt-bsp-fair.png",
        "gantt-fl-r2sp-fair.png",
        "gantt-bsp-fcfs.png",
        "gantt-fl-r2sp-fcfs.png",
    ],
    "fig17": ["egress-resnet20-fair.png", "egress-cnn-fair.png", "egress-resnet20-fcfs.png"],
    "fig18": ["fig18.png"],
    "c_sweep": ["c_sweep.png"],
    "outliers_scoring": ["outliers_scoring.png"],
}
ITEMS = (
    "table2",
    "table4",
    "table5",
    "fig15",
    "fig16",
    "fig17",
    "fig18",
    "c_sweep",
    "outliers",
    "outliers_scoring",
)


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
    """Remaining-share verdict of reduction ``key`` (see :mod:`experiments.verdicts`)."""
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
        "`experiments/table4.py` TTA_FRACTION):",
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
    from experiments.fig17 import BINS

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


def sec_fig18(d: dict) -> list[str]:
    base = [r for r in d["table"] if r.get("variant", "baseline") == "baseline"]
    rows = [
        [
            r["model"],
            str(r["group_size"]),
            ms(r, "avg_round_s"),
            ms(r, "avg_cycle_s"),
            ms(r, "avg_turn_wait_s"),
            ms(r, "avg_pull_s"),
        ]
        for r in base
    ]
    out = ["Baseline (the calibrated profile):", ""]
    out += table(
        ["model", "group size", "group round (s)", "client cycle (s)", "turn wait (s)", "pull (s)"],
        rows,
    )
    sizes = sorted({r["group_size"] for r in d["table"]})
    best = d.get("best_by_variant") or {"baseline": d.get("best_group_size", {})}
    rows = []
    for variant, per_model in best.items():
        for model, b in sorted(per_model.items()):
            cyc = {
                r["group_size"]: ms(r, "avg_cycle_s")
                for r in d["table"]
                if r["model"] == model and r.get("variant", "baseline") == variant
            }
            rows.append(
                [
                    variant,
                    model,
                    *(cyc.get(g, "n/a") for g in sizes),
                    str(b["avg_cycle_s"]),
                    str(b["avg_round_s"]),
                ]
            )
    out += [
        "",
        f"Client cycle (s) per small-group cost assumption (paper's best: "
        f"{paper.FIG18_BEST_GROUP}):",
        "",
    ]
    return out + table(
        ["variant", "model", *(f"size {g}" for g in sizes), "best (cycle)", "best (group round)"],
        rows,
    )


def sec_c_sweep(d: dict) -> list[str]:
    rows = [
        [
            r["strategy"],
            f"{r['fraction']}",
            ms(r, "avg_round_s"),
            ms(r, "avg_cycle_s"),
            ms(r, "avg_pull_s"),
        ]
        for r in d["table"]
    ]
    out = ["Round time (timing-only, paper size, CNN, fair):", ""]
    out += table(["scheme", "C", "group round (s)", "client cycle (s)", "pull (s)"], rows)
    acc = [
        [
            r["strategy"],
            f"{r['fraction']}",
            ms(r, "final_accuracy", 3),
            ms(r, "best_accuracy", 3),
            ms(r, "converged_at", 0),
        ]
        for r in d.get("accuracy", [])
    ]
    return (
        out
        + ["", "Accuracy (real training):", ""]
        + table(["scheme", "C", "final acc", "best acc", "converged at (s)"], acc)
    )


def sec_outliers(d: dict) -> list[str]:
    rows = [
        [
            r["model"],
            r["case"],
            ms(r, "precision"),
            ms(r, "recall"),
            ms(r, "num_blacklisted", 1),
            ms(r, "false_positive_rate", 3),
            ms(r, "median_cosine_outlier"),
            ms(r, "median_cosine_regular"),
            ms(r, "rounds_outliers_higher"),
            ms(r, "final_accuracy", 3),
        ]
        for r in d["table"]
    ]
    return table(
        [
            "model",
            "case",
            "precision",
            "recall",
            "blacklisted",
            "false-positive rate",
            "median cos (outliers)",
            "median cos (regular)",
            "rounds outliers higher",
            "final acc",
        ],
        rows,
    )


def sec_outliers_scoring(d: dict) -> list[str]:
    rows = [
        [
            r["mode"],
            r["reference"],
            str(r["n"]),
            ms(r, "honest_blacklisted", 1),
            ms(r, "precision"),
            ms(r, "recall"),
            ms(r, "blacklisted", 1),
            ms(r, "first_blacklist_round", 1),
            ms(r, "median_outlier"),
            ms(r, "median_regular"),
        ]
        for r in d["table"]
    ]
    out = table(
        [
            "partition",
            "reference",
            "seeds",
            "honest blacklisted",
            "precision",
            "recall",
            "blacklisted",
            "first blacklisting (group round)",
            "median cos (outliers)",
            "median cos (regular)",
        ],
        rows,
    )
    per = d.get("per_round", [])
    rounds = sorted({r["round"] for r in per})
    cells = {}
    for r in per:
        cells.setdefault((r["mode"], r["reference"]), {})[r["round"]] = (
            f"{ms(r, 'median_outlier')} / {ms(r, 'median_regular')}"
        )
    out += [
        "",
        "Median cosine per group round, outliers / regular clients (mean ± std over seeds):",
        "",
    ]
    out += table(
        ["partition", "reference", *(f"round {k}" for k in rounds)],
        [[m, ref, *(c.get(k, "n/a") for k in rounds)] for (m, ref), c in cells.items()],
    )
    shares = [
        [
            r["mode"],
            ms(r, "outlier_top_median", 3),
            ms(r, "outlier_top_min", 3),
            ms(r, "outlier_top_over_097"),
            ms(r, "regular_min_median", 3),
            ms(r, "regular_min_min", 3),
            ms(r, "regular_min_at_least_007"),
        ]
        for r in d.get("shares", [])
    ]
    out += ["", "Realised class shares of the partitions (per seed, then mean ± std):", ""]
    return out + table(
        [
            "partition",
            "outliers' top share (median)",
            "(min)",
            "share of outliers above the paper's bound",
            "regular smallest share (median)",
            "(min)",
            "share of regular clients at the paper's bound",
        ],
        shares,
    )


SECTIONS = {
    "table2": ("Table II — communication slowdown under contention", sec_table2),
    "table4": ("Table IV — per-round and convergence time", sec_table4),
    "table5": ("Table V — push/pull time and communication speedup", sec_table5),
    "fig15": ("Fig. 15 — final accuracy per scheme (+ FedBuff)", sec_fig15),
    "fig16": ("Fig. 16 — client phases (Gantt)", sec_fig16),
    "fig17": ("Fig. 17 — server egress peaks", sec_fig17),
    "fig18": ("Fig. 18 — round time vs group size", sec_fig18),
    "c_sweep": ("Round time and accuracy vs C", sec_c_sweep),
    "outliers": ("Outlier filter precision/recall and false positives", sec_outliers),
    "outliers_scoring": (
        "Outlier scoring at the paper's per-client setting: which cosine reference",
        sec_outliers_scoring,
    ),
}


def _load(out: Path, item: str, name: str) -> dict | None:
    path = out / item / name
    return json.loads(path.read_text()) if path.exists() else None


def _item(out: Path, keep: Path, item: str, summaries: dict[str, dict]) -> list[str]:
    """One item's section: provenance, table, kept figures and its computed reading."""
    title, section = SECTIONS[item]
    lines = [f"## {title}", ""]
    d = summaries.get(item)
    if d is None:
        return lines + [f"Not run (no `{item}/summary.json`): `python -m experiments.{item}`.", ""]
    prov = _load(out, item, "provenance.json")
    lines += [
        f"Scale `{d['scale']}`, seeds {d['seeds']}. Paper: {paper.CLAIMS.get(item, '')}",
        "",
        provenance.summarise(prov) if prov else "Runs: code version not recorded.",
        "",
    ]
    lines += section(d) + [""]
    for name in [f"{item}.csv"] + KEEP.get(item, []):
        src = out / item / ("summary.csv" if name.endswith(".csv") else name)
        if src.exists():
            shutil.copyfile(src, keep / (name if name.endswith(".csv") else f"{item}-{name}"))
            if name.endswith(".png"):
                lines += [f"![{item} {name}](report/{item}-{name})", ""]
    note = notes().get(item)
    return lines + ([note(d, summaries), ""] if note else [])


def build(out: Path, dest: Path) -> str:
    """Write the summary plots, copy kept files to ``dest/report`` and return the Markdown."""
    rekey_runs(out)  # no-op unless caches predate a change of the key scheme
    make_plots(out)
    keep = dest / "report"
    keep.mkdir(parents=True, exist_ok=True)
    summaries = {i: d for i in ITEMS if (d := _load(out, i, "summary.json")) is not None}
    lines = [
        "# FL-R²SP reproduction report",
        "",
        f"Generated by `python -m experiments.report` on {time.strftime('%Y-%m-%d %H:%M')}"
        " from `experiments/results/`: every number below is computed from the cached runs "
        "(`<item>/summary.json`), the scale settings and the paper's numbers "
        "(`experiments/paper.py`).",
        "",
        *scale_text(provenance.code_version(), provenance.reuse_mode()),
    ]
    for item in ITEMS:
        lines += _item(out, keep, item, summaries)
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="experiments/results", help="results root")
    parser.add_argument(
        "--dest", default=str(HERE), help="folder of REPORT.md (default: experiments/)"
    )
    ns = parser.parse_args(argv)
    dest = Path(ns.dest)
    text = build(Path(ns.out), dest)
    (dest / "REPORT.md").write_text(text)
    print(f"wrote {dest / 'REPORT.md'}")


if __name__ == "__main__":
    main()

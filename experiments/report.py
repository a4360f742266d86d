"""Build ``experiments/REPORT.md`` from the result files: ours beside the paper's.

Reads ``<out>/<item>/summary.json`` of every item (missing items are listed
as not run), draws the summary plots (:mod:`experiments.plots`), copies the
summary CSVs and the figures worth keeping into ``experiments/report/`` and
writes the report, one section per item, with our mean ± std, the paper's
number, the ratio ours / paper, and a plain verdict with the reason where we
do not reproduce.

Run: ``python -m experiments.report [--out experiments/results]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from experiments import paper
from experiments.common import rekey_runs
from experiments.plots import make_plots
from experiments.report_text import NOTES, SCALE_TEXT

HERE = Path(__file__).resolve().parent
#: Figures copied next to the report (item -> file names in the item folder).
KEEP = {
    "table2": ["table2.png"], "table5": ["table5.png"],
    "fig15": ["fig15.png", "accuracy-cnn.png", "accuracy-lstm.png"],
    "fig16": ["gantt-bsp-fair.png", "gantt-fl-r2sp-fair.png", "gantt-bsp-fcfs.png",
              "gantt-fl-r2sp-fcfs.png"],
    "fig17": ["egress-resnet20-fair.png", "egress-cnn-fair.png", "egress-resnet20-fcfs.png"],
    "fig18": ["fig18.png"], "c_sweep": ["c_sweep.png"],
}
ITEMS = ("table2", "table4", "table5", "fig15", "fig16", "fig17", "fig18", "c_sweep", "outliers")
#: Ours / paper within this band counts as reproduced.
BAND = (2 / 3, 3 / 2)


def ms(row: dict | None, key: str, digits: int = 2, pct: bool = False) -> str:
    """``mean ± std`` of ``key`` in an aggregated row ('n/a' when missing)."""
    if not row or row.get(f"{key}_mean") is None:
        return "n/a"
    m, s = row[f"{key}_mean"], row.get(f"{key}_std") or 0.0
    if pct:
        return f"{100 * m:.1f}% ± {100 * s:.1f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def vs(row: dict | None, key: str, ref: float | None) -> str:
    """Ratio ours / paper and a verdict."""
    if not row or row.get(f"{key}_mean") is None or not ref:
        return "n/a"
    r = row[f"{key}_mean"] / ref
    ok = BAND[0] <= r <= BAND[1]
    return f"{r:.2f}x {'(reproduced)' if ok else '(**not reproduced**)'}"


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
        rows.append([r["model"], r["discipline"], ms(r, "contended_s"), f"{p.get('contended_s')}",
                     vs(r, "contended_s", p.get("contended_s")), ms(r, "alone_s", 3),
                     f"{p.get('alone_s')}", ms(r, "slowdown", 1), f"{p.get('slowdown')}",
                     vs(r, "slowdown", p.get("slowdown"))])
    return table(["model", "server", "comm 128 (s)", "paper", "ratio", "comm 1 (s)", "paper",
                  "slowdown", "paper", "ratio"], rows)


def sec_table5(d: dict) -> list[str]:
    rows = []
    for r in d["table"]:
        p = paper.TABLE5.get(r["model"], {})
        cells = [r["model"], r["discipline"]]
        for key in ("bsp_push_s", "bsp_pull_s", "flr2sp_push_s", "flr2sp_pull_s"):
            cells += [f"{ms(r, key)} ({p.get(key)}; {vs(r, key, p.get(key)).split(' ')[0]})"]
        cells += [ms(r, "speedup", pct=True), f"{100 * p.get('speedup', 0):.1f}%",
                  vs(r, "speedup", p.get("speedup")), ms(r, "pull_ratio", 1)]
        rows.append(cells)
    return table(["model", "server", "BSP push (paper; ratio)", "BSP pull", "FL-R²SP push",
                  "FL-R²SP pull", "speedup", "paper", "ratio", "pull BSP/FL"], rows)


def sec_table4(d: dict) -> list[str]:
    out = ["Per-round time at the paper's size (timing-only, 128 clients):", ""]
    rows = []
    for r in d.get("round_time", []):
        p = paper.TABLE4.get(r["model"], {})
        red = 1 - p["flr2sp_round_s"] / p["bsp_round_s"] if p else None
        rows.append([r["model"], r["discipline"], f"{ms(r, 'bsp_round_s')} ({p.get('bsp_round_s')})",
                     f"{ms(r, 'flr2sp_round_s')} ({p.get('flr2sp_round_s')})",
                     ms(r, "flr2sp_cycle_s"), ms(r, "round_reduction", pct=True),
                     "n/a" if red is None else f"{100 * red:.1f}%", vs(r, "round_reduction", red)])
    out += table(["model", "server", "BSP round s (paper)", "FL-R²SP group round s (paper)",
                  "FL-R²SP client cycle s", "reduction", "paper", "ratio"], rows)
    out += ["", "Convergence with real training at the run's scale (virtual seconds; conv = start "
            "of the 10-evaluation stagnant window; tta = time to 90% of the lower best accuracy):", ""]
    rows = []
    for r in d["table"]:
        p = paper.TABLE4.get(r["model"], {})
        conv = "/".join(f"{round((r.get(k) or 0) * r['n'])}" for k in ("bsp_converged_mean",
                                                                          "flr2sp_converged_mean"))
        rows.append([r["model"], r.get("filter", "on"), f"{r['n']} ({conv})", ms(r, "bsp_conv_s", 0),
                     ms(r, "flr2sp_conv_s", 0), ms(r, "improvement", pct=True),
                     f"{100 * p.get('improvement', 0):.1f}%", vs(r, "improvement", p.get("improvement")),
                     ms(r, "bsp_tta_s", 0), ms(r, "flr2sp_tta_s", 0), ms(r, "tta_improvement", pct=True),
                     ms(r, "bsp_acc", 3), ms(r, "flr2sp_acc", 3)])
    out += table(["model", "filter", "seeds (converged BSP/FL)", "BSP conv (s)", "FL-R²SP conv (s)", "improvement",
                  "paper", "ratio", "BSP tta (s)", "FL-R²SP tta (s)", "tta improvement",
                  "BSP final acc", "FL-R²SP final acc"], rows)
    return out


def sec_fig15(d: dict) -> list[str]:
    rows = [[r["model"], r["scheme"], ms(r, "final_accuracy", 3), ms(r, "best_accuracy", 3),
             ms(r, "converged_at", 0), str(r.get("n"))] for r in d["table"]]
    out = table(["model", "scheme", "final acc", "best acc", "converged at (s)", "seeds"], rows)
    loss = [[x["model"], x["scheme"], f"{100 * x['loss_points']:.1f} points",
             f"{100 * x['loss_relative']:.1f}%", f"~{100 * paper.FIG15_FILTER_LOSS:.0f}%"]
            for x in d.get("filter_loss", [])]
    return out + ["", "Final accuracy with the filter minus without (negative: the filter "
                  "costs accuracy):", ""] + table(
        ["model", "scheme", "gain (points)", "gain (relative)", "paper (loss without filter)"], loss)


def sec_fig16(d: dict) -> list[str]:
    rows = [[r["strategy"], r["discipline"], ms(r, "avg_pull_s"), ms(r, "avg_train_s"),
             ms(r, "avg_push_s"), ms(r, "avg_wait_s"), ms(r, "avg_cycle_s"), ms(r, "cv_update_gap", 3)]
            for r in d["table"]]
    return table(["scheme", "server", "pull", "train+delay", "push", "wait", "cycle",
                  "cv of update gaps"], rows)


def sec_fig17(d: dict) -> list[str]:
    rows = []
    for r in d["table"]:
        ref = paper.FIG17_PEAK_RATIO.get(r["model"])
        rows.append([r["model"], r["discipline"], ms(r, "peak_ratio_0.1s"), ms(r, "peak_ratio_1s"),
                     ms(r, "peak_ratio_5s"), f"{ref or '—'}", vs(r, "peak_ratio_1s", ref)])
    return table(["model", "server", "peak ratio 0.1 s bins", "1 s bins", "5 s bins", "paper",
                  "ratio (1 s)"], rows)


def sec_fig18(d: dict) -> list[str]:
    rows = [[r["model"], str(r["group_size"]), ms(r, "avg_round_s"), ms(r, "avg_cycle_s"),
             ms(r, "avg_turn_wait_s"), ms(r, "avg_pull_s")] for r in d["table"]]
    out = table(["model", "group size", "group round (s)", "client cycle (s)", "turn wait (s)",
                 "pull (s)"], rows)
    best = d.get("best_group_size", {})
    out += ["", "Best group size (paper: 32): " + "; ".join(
        f"{m}: round {b['avg_round_s']}, cycle {b['avg_cycle_s']}" for m, b in sorted(best.items()))]
    return out


def sec_c_sweep(d: dict) -> list[str]:
    rows = [[r["strategy"], f"{r['fraction']}", ms(r, "avg_round_s"), ms(r, "avg_cycle_s"),
             ms(r, "avg_pull_s")] for r in d["table"]]
    out = ["Round time (timing-only, paper size, CNN, fair):", ""]
    out += table(["scheme", "C", "group round (s)", "client cycle (s)", "pull (s)"], rows)
    acc = [[r["strategy"], f"{r['fraction']}", ms(r, "final_accuracy", 3), ms(r, "best_accuracy", 3),
            ms(r, "converged_at", 0)] for r in d.get("accuracy", [])]
    return out + ["", "Accuracy (real training):", ""] + table(
        ["scheme", "C", "final acc", "best acc", "converged at (s)"], acc)


def sec_outliers(d: dict) -> list[str]:
    rows = [[r["model"], r["case"], ms(r, "precision"), ms(r, "recall"), ms(r, "num_blacklisted", 1),
             ms(r, "false_positive_rate", 3), ms(r, "final_accuracy", 3)] for r in d["table"]]
    return table(["model", "case", "precision", "recall", "blacklisted", "false-positive rate",
                  "final acc"], rows)


SECTIONS = {"table2": ("Table II — communication slowdown under contention", sec_table2),
            "table4": ("Table IV — per-round and convergence time", sec_table4),
            "table5": ("Table V — push/pull time and communication speedup", sec_table5),
            "fig15": ("Fig. 15 — final accuracy per scheme (+ FedBuff)", sec_fig15),
            "fig16": ("Fig. 16 — client phases (Gantt)", sec_fig16),
            "fig17": ("Fig. 17 — server egress peaks", sec_fig17),
            "fig18": ("Fig. 18 — round time vs group size", sec_fig18),
            "c_sweep": ("Round time and accuracy vs C", sec_c_sweep),
            "outliers": ("Outlier filter precision/recall and false positives", sec_outliers)}


def build(out: Path, dest: Path) -> str:
    """Write the summary plots, copy kept files to ``dest/report`` and return the Markdown."""
    rekey_runs(out)  # no-op unless caches predate a change of the key scheme
    make_plots(out)
    keep = dest / "report"
    keep.mkdir(parents=True, exist_ok=True)
    lines = ["# FL-R²SP reproduction report", "",
             f"Generated by `python -m experiments.report` on {time.strftime('%Y-%m-%d %H:%M')}"
             " from `experiments/results/`. Ratios are ours / paper; within "
             f"{BAND[0]:.2f}x–{BAND[1]:.2f}x counts as reproduced.", "", *SCALE_TEXT, ""]
    for item in ITEMS:
        title, section = SECTIONS[item]
        lines += [f"## {title}", ""]
        path = out / item / "summary.json"
        if not path.exists():
            lines += [f"Not run (no `{item}/summary.json`).", ""]
            continue
        d = json.loads(path.read_text())
        lines += [f"Scale `{d['scale']}`, seeds {d['seeds']}. Paper: {paper.CLAIMS.get(item, '')}", ""]
        lines += section(d) + [""]
        for name in [f"{item}.csv"] + KEEP.get(item, []):
            src = out / item / ("summary.csv" if name.endswith(".csv") else name)
            if src.exists():
                shutil.copyfile(src, keep / (name if name.endswith(".csv") else f"{item}-{name}"))
                if name.endswith(".png"):
                    lines += [f"![{item} {name}](report/{item}-{name})", ""]
        lines += [NOTES.get(item, ""), ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="experiments/results", help="results root")
    parser.add_argument("--dest", default=str(HERE), help="folder of REPORT.md (default: experiments/)")
    ns = parser.parse_args(argv)
    dest = Path(ns.dest)
    text = build(Path(ns.out), dest)
    (dest / "REPORT.md").write_text(text)
    print(f"wrote {dest / 'REPORT.md'}")


if __name__ == "__main__":
    main()

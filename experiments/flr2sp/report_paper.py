"""Tables of REPORT.md for the paper-size training runs and the executor figures (issue 10).

* :func:`sec_paper_scale`: Fig. 15 and Table IV's convergence at the paper's size from
  ``<out>/paper_scale/summary.json`` (:mod:`experiments.flr2sp.paper_scale`), with how each
  run was computed, the verdicts by the rules of :mod:`experiments.common.verdicts`, and the
  runs that are not cached with their commands.
* :func:`executor_lines`: the executor benchmark of the GPU checks, read from the
  committed ``experiments/report/executor_figures.json``
  (:mod:`experiments.flr2sp.executor_figures`), with the issue's goals as stated rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.common import verdicts
from experiments.flr2sp import paper
from experiments.flr2sp.report_tables import find, ms, rem, table

#: Issue 10's goals on a GPU: batched samples/s at least this share of one large-batch
#: loop on the same GPU, and a paper-size CNN run to convergence within this many seconds.
GPU_RATE_GOAL = 0.5
GPU_RUN_GOAL_S = 600.0


def sec_paper_scale(d: dict) -> list[str]:
    """Per-scheme accuracy and execution, the filter's gain, convergence and what is missing."""
    rows = [
        [
            r["model"],
            r["scheme"],
            str(r["n"]),
            ms(r, "final_accuracy", 3),
            ms(r, "best_accuracy", 3),
            ms(r, "converged_at", 0),
            ms(r, "num_blacklisted", 1),
            ms(r, "precision"),
            ms(r, "recall"),
            ms(r, "run_seconds", 0),
            ms(r, "wall_s_per_round", 2),
            _span_of(d.get("runs", []), r, "concurrent_runs"),
        ]
        for r in d["table"]
    ]
    out = table(
        [
            "model",
            "scheme",
            "seeds",
            "final acc",
            "best acc",
            "converged at (virtual s)",
            "blacklisted",
            "precision",
            "recall",
            "wall s per run",
            "wall s per round",
            "runs sharing the machine",
        ],
        rows,
    )
    out += ["", *filter_table(d), "", *conv_table(d), "", *missing_lines(d)]
    return out


def _span_of(runs: list[dict], agg: dict, key: str) -> str:
    xs = sorted(
        r[key]
        for r in runs
        if (r["model"], r["scheme"]) == (agg["model"], agg["scheme"]) and r.get(key) is not None
    )
    if not xs:
        return "n/a"
    return str(xs[0]) if xs[0] == xs[-1] else f"{xs[0]}–{xs[-1]}"


def filter_table(d: dict) -> list[str]:
    """The filter's gain on the seeds where both runs ran, against the paper's ~10%."""
    rows = [
        [
            x["model"],
            x["scheme"],
            str(x["n"]),
            ms(x, "gain_points"),
            ms(x, "gain_relative", pct=True),
            f"{100 * paper.FIG15_FILTER_LOSS:.0f}%",
            verdicts.ratio_verdict(x.get("gain_relative_mean"), paper.FIG15_FILTER_LOSS),
        ]
        for x in d.get("filter_pairs", [])
    ]
    head = [
        "Final accuracy with the filter minus without, on the seeds where both ran "
        "(relative: over the accuracy with the filter; negative: the filter costs accuracy):",
        "",
    ]
    return head + table(
        ["model", "scheme", "seeds", "gain (accuracy)", "gain (relative)", "paper", "ratio"], rows
    )


def conv_table(d: dict) -> list[str]:
    """Table IV's convergence pairs (both schemes cached for the seed)."""
    rows = []
    for r in d.get("convergence", []):
        p = paper.TABLE4.get(r["model"], {})
        rows.append(
            [
                r["model"],
                r["filter"],
                str(r["n"]),
                ms(r, "bsp_conv_s", 0),
                ms(r, "flr2sp_conv_s", 0),
                ms(r, "improvement", pct=True),
                f"{100 * p['improvement']:.1f}%" if "improvement" in p else "n/a",
                rem(r, "improvement", p.get("improvement"), "paper_scale"),
                ms(r, "bsp_round_s"),
                ms(r, "flr2sp_round_s"),
                ms(r, "tta_improvement", pct=True),
                ms(r, "bsp_acc", 3),
                ms(r, "flr2sp_acc", 3),
            ]
        )
    head = [
        "Table IV's convergence (virtual s; conv = start of the stagnant window; improvement = "
        "1 − FL-R²SP / BSP; tta = time to a fraction of the lower best accuracy, "
        "`experiments/flr2sp/table4.py` TTA_FRACTION):",
        "",
    ]
    return head + table(
        [
            "model",
            "filter",
            "seeds",
            "BSP conv (s)",
            "FL-R²SP conv (s)",
            "improvement",
            "paper",
            "verdict",
            "BSP round (s)",
            "FL-R²SP group round (s)",
            "tta improvement",
            "BSP final acc",
            "FL-R²SP final acc",
        ],
        rows,
    )


def missing_lines(d: dict) -> list[str]:
    """Runs that are not cached: per model and scheme (per model when none of it ran), the
    seeds and one command."""
    ran = {r["model"] for r in d.get("runs", [])}
    groups: dict[tuple[str, str], list[dict]] = {}
    for m in d.get("missing", []):
        key = (m["model"], "" if m["model"] not in ran else m["scheme"])
        groups.setdefault(key, []).append(m)
    if not groups:
        return ["Every run of the item's models, schemes and seeds ran."]
    out = ["Not run (the command computes them into the run cache; then rerun this item):", ""]
    for (model, scheme), rows in groups.items():
        seeds = ",".join(dict.fromkeys(str(m["seed"]) for m in rows))
        schemes = ",".join(dict.fromkeys(m["scheme"] for m in rows))
        first = rows[0]["command"]
        cmd = first.replace(f"--seeds {rows[0]['seed']}", f"--seeds {seeds}").replace(
            f"--schemes {rows[0]['scheme']}", f"--schemes {schemes}"
        )
        what = f"`{scheme}`" if scheme else "every scheme (none ran)"
        out.append(f"- {model} {what}, seeds {seeds}: `{cmd}`")
    return out


def load_executor(report_dir: Path) -> dict[str, Any] | None:
    """The parsed executor figures, or None when the file was never written."""
    path = report_dir / "executor_figures.json"
    return json.loads(path.read_text()) if path.exists() else None


def executor_rows(data: dict[str, Any]) -> list[list[str]]:
    """One table row per benchmark row: rate, share of the limit, round s, weight differences."""
    out = []
    for b in data.get("benches", []):
        for r in b["rows"]:
            rate, x = r.get("samples_per_s"), r.get("x_limit")
            out.append(
                [
                    f"{b['source']}/{b['stage']}",
                    f"{b['model']}, {b['clients']} clients x tau {b['tau']} x batch {b['batch']}",
                    r["label"],
                    "" if rate is None else f"{rate:,.0f}",
                    "" if not x else f"{1 / x:.2f}",
                    "" if r.get("round_s") is None else f"{r['round_s']:.1f}",
                    _g(r.get("max_dw")),
                    _g(r.get("med_dw")),
                    _g(r.get("max_rel")),
                    r.get("rerun", ""),
                ]
            )
    return out


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.2g}"


def executor_table(data: dict[str, Any]) -> list[str]:
    """The benchmark rows and the peak-memory rows as Markdown tables."""
    out = table(
        [
            "log/stage",
            "round",
            "row",
            "samples/s",
            "share of the limit",
            "round s",
            "max |dw|",
            "median |dw|",
            "max rel",
            "rerun",
        ],
        executor_rows(data),
    )
    mem = [
        [b["model"], m["executor"], str(m["clients"]), f"{m['main_mib']:.0f}", m["workers"]]
        + [f"{m['total_mib']:.0f}", "n/a" if m["device_mib"] is None else f"{m['device_mib']:.0f}"]
        for b in data.get("benches", [])
        for m in b.get("memory", [])
    ]
    if mem:
        out += ["", "Peak resident memory (MiB, a fresh process per row):", ""]
        out += table(
            ["model", "executor", "clients", "main", "workers", "total", "GPU"],
            mem,
        )
    return out


def executor_lines(report_dir: Path) -> list[str]:
    """The executor section: tables and the computed reading."""
    from experiments.flr2sp.report_text_paper import note_executor

    data = load_executor(report_dir)
    title = "## Client-job executor: speed, tolerance, memory (issue 10)"
    if data is None:
        return [title, "", "Not parsed: `python -m experiments.flr2sp.executor_figures`.", ""]
    return [title, "", *executor_table(data), "", note_executor(data), ""]


def run_of(d: dict, **keys: Any) -> dict | None:
    """The aggregated row of ``d['table']`` with these columns."""
    return find(d.get("table", []), **keys)

"""The section of REPORT.md for the paper-size training runs (Fig. 15 and Table IV at the
paper's size).

:func:`sec_paper_scale` tabulates ``<out>/paper_scale/summary.json``
(:mod:`experiments.flr2sp.paper_scale`) with how each run was computed, the verdicts by the rules
of :mod:`experiments.common.verdicts` and the runs that are not cached with their commands;
:func:`note_paper_scale` is its reading (every figure computed, none typed here).
"""

from __future__ import annotations

from typing import Any

from experiments.common import verdicts
from experiments.common.conf import TRAINING
from experiments.flr2sp import paper
from experiments.flr2sp.report.executor import GPU_RUN_GOAL_S, REPORT_DIR, load_executor
from experiments.flr2sp.report.formats import (
    Summary,
    find,
    mean,
    ms,
    num,
    pct,
    ratio,
    rem,
    scaled,
    span,
    table,
)


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
            verdicts.reduction_verdict(
                x.get("gain_relative_mean"), paper.FIG15_FILTER_LOSS, seeds=x["n"]
            ),
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


def run_of(d: dict, **keys: Any) -> dict | None:
    """The aggregated row of ``d['table']`` with these columns."""
    return find(d.get("table", []), **keys)


def _setting() -> str:
    s = TRAINING["paper"]
    groups = s["num_partitions"] // s["group_size"]
    return (
        f"{s['num_partitions']} clients, {groups} groups of {s['group_size']}, C = "
        f"{s['fraction']}, tau = {s['local_iterations']}, lr {s['lr']}, batch {s['batch_size']}, "
        f"the full CIFAR-10 train split, outliers {pct(s['outlier_fraction'])} of clients "
        f"(Dirichlet {s['outlier_alpha']}, the others {s['alpha']}), stagnation = no gain above "
        f"{s['convergence_tol']} for {s['convergence_window']} evaluations"
    )


def _filter_text(d: Summary) -> str:
    runs = d.get("runs", [])
    on = [r for r in runs if not r["scheme"].endswith("-nofilter") and r.get("recall") is not None]
    off = [r for r in runs if r["scheme"].endswith("-nofilter")]
    n = TRAINING["paper"]["num_partitions"]
    banned = span((r["num_blacklisted"] for r in on), 0, "")
    acc_on = span((r["final_accuracy"] for r in on), 3, "")
    text = (
        f"With the filter on, BSP and FL-R²SP blacklist {banned} of {n} clients (precision "
        f"{span((r['precision'] for r in on), 2, '')}, recall "
        f"{span((r['recall'] for r in on), 2, '')}) and stop "
        f"on stagnation at a final accuracy of {acc_on}"
    )
    if off:
        text += (
            f"; with it off they reach {span((r['final_accuracy'] for r in off), 3, '')} "
            f"(runs: {len(off)})"
        )
    gains = [
        f"{x['scheme']}: {num(scaled(mean(x, 'gain_points'), 100), 1)} points "
        f"({pct(mean(x, 'gain_relative'))}, seeds: {x['n']}; "
        + verdicts.reduction_verdict(mean(x, "gain_relative"), paper.FIG15_FILTER_LOSS, x["n"])
        + ")"
        for x in d.get("filter_pairs", [])
        if mean(x, "gain_points") is not None
    ]
    if gains:
        text += ". The filter's gain against the paper's: " + "; ".join(gains)
    return text + "."


def _conv_text(d: Summary) -> str:
    parts = []
    ref = paper.TABLE4["cnn"]["improvement"]
    for r in d.get("convergence", []):
        imp = mean(r, "improvement")
        if imp is None:
            continue
        who = "earlier" if imp > 0 else "later"
        parts.append(
            f"filter {r['filter']} (seeds: {r['n']}): FL-R²SP converges {pct(abs(imp))} {who} "
            f"than BSP ({verdicts.reduction_verdict(imp, ref, seeds=r['n'])} against the "
            f"paper's {pct(ref)} "
            f"cut); its group round is {num(mean(r, 'flr2sp_round_s'))} s against BSP's round "
            f"of {num(mean(r, 'bsp_round_s'))} s, and it needs "
            f"{num(ratio(mean(r, 'flr2sp_rounds'), mean(r, 'bsp_rounds')))}x BSP's number of "
            "rounds"
        )
    final = {r["scheme"]: mean(r, "final_accuracy") for r in d["table"]}
    acc = [
        (final.get(f), final.get(b))
        for b, f in (("bsp", "fl-r2sp"), ("bsp-nofilter", "fl-r2sp-nofilter"))
    ]
    text = "Table IV: " + ("; ".join(parts) or "no pair of runs cached") + "."
    if any(f is not None and b is not None for f, b in acc):
        text += (
            " FL-R²SP's final accuracy minus BSP's (the paper: comparable, within "
            f"{verdicts.ACCURACY_TOL:g}): "
            + ", ".join(verdicts.accuracy_verdict(f, b) for f, b in acc)
            + " (filter on, then off)."
        )
    return text


def _execution_text(d: Summary) -> str:
    runs = d.get("runs", [])
    env = (load_executor(REPORT_DIR) or {}).get("environment", {})
    how = ", ".join(f"`{e['executor']}` on `{e['compute_device']}`" for e in d.get("execution", []))
    wall = [r["run_seconds"] for r in runs]
    fits = [w <= GPU_RUN_GOAL_S for w in wall if w is not None]
    cuda = any(e["compute_device"] == "cuda" for e in d.get("execution", []))
    return (
        f"How they ran (the runs' records): {how or 'n/a'}"
        + (f", on one {env['gpu']} (the GPU checks' log)" if cuda and env.get("gpu") else "")
        + f"; {span(wall, 0, ' s')} wall per run while "
        f"{span((r['concurrent_runs'] for r in runs), 0, '')} runs (the scoring runs included) "
        "were being computed on the machine at once, "
        f"{span((r['wall_s_per_round'] for r in runs), 2, ' s')} wall per BSP-round "
        f"equivalent. The executor's goal of a run within {GPU_RUN_GOAL_S:.0f} s: "
        + (f"met by {sum(fits)} of {len(fits)} runs, while sharing the GPU." if fits else "n/a.")
    )


def _missing_text(d: Summary) -> str:
    miss = d.get("missing", [])
    models = sorted({m["model"] for m in miss} - {r["model"] for r in d.get("runs", [])})
    data = load_executor(REPORT_DIR) or {}
    cost = [
        f"a paper-size {b['model']} round took {r['round_s']:.1f} s with the batched executor"
        for b in data.get("benches", [])
        if b["model"] in models
        for r in b["rows"]
        if r["label"].startswith("batched") and r.get("round_s") is not None
    ]
    return (
        f"Not cached: {len(miss)} runs (listed above with their commands)"
        + (f"; no run at all of {', '.join(models)}" if models else "")
        + (f"; measured cost on the GPU: {'; '.join(cost)}" if cost else "")
        + "."
    )


def note_paper_scale(d: Summary, _: dict[str, Summary]) -> str:
    """Reading of the paper-size section."""
    return " ".join(
        [
            f"**Reading.** The paper's setting: {_setting()}.",
            _filter_text(d),
            _conv_text(d),
            _execution_text(d),
            _missing_text(d),
        ]
    )

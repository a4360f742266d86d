"""Prose of REPORT.md for the training items (Table IV, the accuracy figure, the outliers).

As :mod:`experiments.flr2sp.report_text`: every figure is computed from the
summaries, the settings or the paper's numbers; no string literal here holds
a digit (a test checks it).
"""

from __future__ import annotations

from typing import Any

from experiments.common import verdicts
from experiments.common.conf import TRAINING
from experiments.flr2sp import paper
from experiments.flr2sp.report_text import mean, num, one, pct, ratio, span

Summary = dict[str, Any]


def note_table4(d: Summary, _: dict[str, Summary]) -> str:
    rt = d.get("round_time", [])
    fl = [ratio(mean(r, "flr2sp_round_s"), paper.TABLE4[r["model"]]["flr2sp_round_s"]) for r in rt]
    bsp = [ratio(mean(r, "bsp_round_s"), paper.TABLE4[r["model"]]["bsp_round_s"]) for r in rt]
    rem = []
    for r in rt:
        p = paper.TABLE4[r["model"]]
        rem.append(
            verdicts.remaining_ratio(
                mean(r, "round_reduction"), 1 - p["flr2sp_round_s"] / p["bsp_round_s"]
            )
        )
    text = (
        f"**Per-round time.** FL-R²SP's group round is {span(fl)} the paper's. BSP's round is "
        f"{span(bsp)} the paper's; it is a fitted input (the seconds per iteration were derived "
        "from it with the paper's pull and push), so its deviation is our pull + push minus the "
        f"paper's. The per-round reduction leaves {span(rem)} the paper's remaining share."
    )
    conv = []
    for r in d.get("table", []):
        tta = mean(r, "tta_improvement")
        done = [round((mean(r, k) or 0.0) * r["n"]) for k in ("bsp_converged", "flr2sp_converged")]
        who = ("BSP" if tta is not None and tta < 0 else "FL-R²SP") if tta is not None else None
        conv.append(
            f"filter {r.get('filter', 'on')}: converged BSP {done[0]}, "
            f"FL-R²SP {done[1]} of {r['n']} seeds (the improvement column averages the seeds "
            "where both converged); final accuracy "
            f"{num(mean(r, 'bsp_acc'), 3)} vs {num(mean(r, 'flr2sp_acc'), 3)}; "
            + (
                f"{who} reaches the common accuracy target first ({pct(tta)} time-to-accuracy "
                "change)"
                if who
                else "no common accuracy target reached"
            )
        )
    tr = TRAINING[d.get("scale", "laptop")]
    if conv:
        text += (
            f" **Convergence at `{d.get('scale')}` scale** (at most "
            f"{tr['rounds']} rounds; not comparable with the paper's seconds): "
            + "; ".join(conv)
            + "."
        )
    return text


def note_fig15(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    parts = []
    for x in d.get("filter_loss", []) if "filter_pairs" not in d else []:
        verb = "costs" if x["loss_points"] < 0 else "gains"
        parts.append(
            f"{x['scheme']}: the filter {verb} {num(abs(100 * x['loss_points']), 1)} points"
        )
    for x in d.get("filter_pairs", []):
        gain = mean(x, "gain_points")
        if gain is None:
            continue
        parts.append(
            f"{x['scheme']}: the filter {'costs' if gain < 0 else 'gains'} "
            f"{num(abs(100 * gain), 1)} points ({pct(mean(x, 'gain_relative'))} of the accuracy "
            f"with it; seeds: {x['n']}; "
            f"{verdicts.ratio_verdict(mean(x, 'gain_relative'), paper.FIG15_FILTER_LOSS)})"
        )
    asp = mean(one(rows, scheme="asp"), "final_accuracy")
    others = [
        mean(one(rows, scheme=s), "final_accuracy") for s in ("bsp-nofilter", "fl-r2sp-nofilter")
    ]
    gap = [None if asp is None or o is None else 100 * (o - asp) for o in others]
    asp_text = (
        f" ASP (averaging mixing) ends {span(gap, 1, ' points')} below BSP and FL-R²SP "
        "without the filter."
        if any(g is not None for g in gap)
        else " ASP did not run."
    )
    return (
        "**Reading.** Paper: without the filter both schemes lose about "
        f"{pct(paper.FIG15_FILTER_LOSS)} accuracy. Here "
        + ("; ".join(parts) or "no pair ran")
        + "."
        + asp_text
        + " Runs stop at the round cap or on stagnation, so final accuracies "
        "are at different virtual times; the curves show every seed against virtual time. Why "
        "the filter behaves as it does: the outlier sections."
    )


def note_outliers(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    parts = []
    for r in rows:
        if mean(r, "false_positive_rate") is not None:
            parts.append(
                f"{r['case']}: {pct(mean(r, 'false_positive_rate'))} of clients "
                "blacklisted without any outlier present"
            )
        else:
            parts.append(
                f"{r['case']}: precision {num(mean(r, 'precision'))}, recall "
                f"{num(mean(r, 'recall'))}"
            )
    diag = [
        f"{r['case']}: outliers {num(mean(r, 'median_cosine_outlier'))} vs regular "
        f"{num(mean(r, 'median_cosine_regular'))}, outliers higher in "
        f"{pct(mean(r, 'rounds_outliers_higher'))} of the scored rounds"
        for r in rows
        if mean(r, "median_cosine_outlier") is not None
    ]
    return (
        "**Reading.** Precision and recall are against the true outlier ids; in the "
        "no-outlier cases every blacklisted client is a false positive. "
        + "; ".join(parts)
        + "."
        + (
            " Median cosine of the scored updates (the runs' `client_score` records): "
            + "; ".join(diag)
            + "."
            if diag
            else ""
        )
        + " The rule is the paper's (cosine below β for consecutive rounds) against the run's "
        "`cosine-reference`; the next section compares the references at the paper's "
        "per-client setting."
    )


def note_outliers_scoring(d: Summary, _: dict[str, Summary]) -> str:
    from fl_r2sp.datasets.paper_strict import OUTLIER_TOP, REGULAR_MIN
    from fl_r2sp.strategies.params import OutlierParams

    rule = d.get("rule", {})
    shares = []
    for r in d.get("shares", []):
        shares.append(
            f"`{r['mode']}`: {pct(mean(r, 'outlier_top_over_097'))} of outliers have one class "
            f"over {float(OUTLIER_TOP):.0%} (median top share "
            f"{num(mean(r, 'outlier_top_median'), 3)}), {pct(mean(r, 'regular_min_at_least_007'))}"
            f" of regular clients have every class at or above {float(REGULAR_MIN):.0%} (median "
            f"smallest share {num(mean(r, 'regular_min_median'), 3)})"
        )
    matches = [
        f"`{r['mode']}`"
        for r in d.get("shares", [])
        if mean(r, "outlier_top_over_097") == mean(r, "regular_min_at_least_007") == 1.0
    ]
    shares.append(
        "the description holds for every client only in " + (", ".join(matches) or "no mode")
    )
    best = []
    for mode in dict.fromkeys(r["mode"] for r in d["table"]):
        mine = [r for r in d["table"] if r["mode"] == mode]
        cleanest = min(mine, key=lambda r: mean(r, "honest_blacklisted") or 0.0)
        sharpest = max(mine, key=lambda r: mean(r, "recall") or 0.0)
        best.append(
            f"`{mode}`: fewest honest clients blacklisted with `{cleanest['reference']}` "
            f"({num(mean(cleanest, 'honest_blacklisted'), 1)}), highest recall with "
            f"`{sharpest['reference']}` ({num(mean(sharpest, 'recall'))})"
        )
    paper_ref = OutlierParams().reference
    early = []
    for mode in dict.fromkeys(r["mode"] for r in d.get("per_round", [])):
        per = [r for r in d["per_round"] if (r["mode"], r["reference"]) == (mode, paper_ref)]
        above = [
            r["round"]
            for r in per
            if (mean(r, "median_outlier") or 0.0) > (mean(r, "median_regular") or 0.0)
        ]
        byw = {
            r["warmup"]: r
            for r in d.get("by_warmup", [])
            if (r["mode"], r["reference"]) == (mode, paper_ref)
        }
        early.append(
            f"`{mode}`: outliers' median above the regular clients' in group rounds "
            f"{', '.join(map(str, above)) or 'none'} of {len(per)}; with the first rounds "
            "unscored, honest clients blacklisted "
            + ", ".join(
                f"{num(mean(r, 'honest_blacklisted'), 1)} (unscored {w}, recall "
                f"{num(mean(r, 'recall'))})"
                for w, r in sorted(byw.items())
            )
        )
    costs = [c["run_seconds"] for c in d.get("cost", []) if c.get("run_seconds")]
    jobs = [c["jobs"] for c in d.get("cost", []) if c.get("jobs")]
    how = ", ".join(
        dict.fromkeys(
            f"executor `{c.get('executor', 'serial')}` on `{c.get('compute_device', 'auto')}`"
            for c in d.get("cost", [])
        )
    )
    return (
        "**Reading.** The paper's description of its partition: "
        + "; ".join(shares)
        + ". Replaying the rule (β = "
        f"{rule.get('beta')}, {rule.get('rounds')} consecutive "
        "rounds) on each reference's score series: "
        + "; ".join(best)
        + f". Under the paper's reading (`{paper_ref}`, the default): "
        + "; ".join(early)
        + ". These are the "
        "blacklisting statistics of a trajectory *without* the filter: identical to a run with "
        "that reference's filter on up to its first blacklisting, after which a real run "
        "trains on fewer clients. Cost: "
        + (f"{span(costs, 0, ' s')} wall per run ({span(jobs, 0, ' jobs')})" if costs else "n/a")
        + f", computed with {how or 'n/a'} (the runs' records)."
    )

"""Sections of REPORT.md for the FL-R²SP training items: Table IV, the accuracy figure, outliers.

Each item has its table (:func:`sec_table4` ...) and its reading (:func:`note_table4` ...). Every
figure of the readings is computed from the summaries, the settings or the paper's numbers; no
string literal here holds a digit (a test checks it).
"""

from __future__ import annotations

from experiments.common import verdicts
from experiments.common.conf import TRAINING
from experiments.flr2sp import paper
from experiments.flr2sp.report.formats import (
    Summary,
    mean,
    ms,
    num,
    one,
    pct,
    ratio,
    rem,
    span,
    table,
    vs,
)
from experiments.flr2sp.report.paper_size import filter_table


def note_table4(d: Summary, _: dict[str, Summary]) -> str:
    rt = d.get("round_time", [])
    fl = [ratio(mean(r, "flr2sp_round_s"), paper.TABLE4[r["model"]]["flr2sp_round_s"]) for r in rt]
    bsp = [ratio(mean(r, "bsp_round_s"), paper.TABLE4[r["model"]]["bsp_round_s"]) for r in rt]
    rem = []
    for r in rt:
        p = paper.TABLE4[r["model"]]
        rem.append(ratio(mean(r, "round_reduction"), 1 - p["flr2sp_round_s"] / p["bsp_round_s"]))
    text = (
        f"**Per-round time.** FL-R²SP's group round is {span(fl)} the paper's. BSP's round is "
        f"{span(bsp)} the paper's; it is a fitted input (the seconds per iteration were derived "
        "from it with the paper's pull and push), so its deviation is our pull + push minus the "
        f"paper's. The per-round reduction is {span(rem)} the paper's."
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
            + verdicts.reduction_verdict(
                mean(x, "gain_relative"), paper.FIG15_FILTER_LOSS, seeds=x["n"]
            )
            + ")"
        )
    fl, bsp = (one(rows, scheme=s) for s in ("fl-r2sp", "bsp"))
    seeds = min((r.get("n") or 0) for r in (fl, bsp) if r is not None) if fl and bsp else None
    same = (
        " FL-R²SP's final accuracy minus BSP's (the paper: comparable, within "
        f"{verdicts.ACCURACY_TOL:g}): "
        + verdicts.accuracy_verdict(mean(fl, "final_accuracy"), mean(bsp, "final_accuracy"), seeds)
        + "."
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
        + same
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
    from fl_r2sp.fl.policies.params import OutlierParams

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
    cells: dict[tuple[str, str], dict[int, str]] = {}
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
    out += ["", *warmup_table(d.get("by_warmup", []))]
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


def warmup_table(rows: list[dict]) -> list[str]:
    """Honest clients blacklisted and recall when the first rounds are left unscored."""
    warmups = sorted({r["warmup"] for r in rows})
    if not warmups:
        return []
    cells: dict[tuple[str, str], dict[int, str]] = {}
    for r in rows:
        cells.setdefault((r["mode"], r["reference"]), {})[r["warmup"]] = (
            f"{ms(r, 'honest_blacklisted', 1)} / {ms(r, 'recall')}"
        )
    head = [
        "Replay with the first group rounds left unscored (the policy's `outlier-warmup`; "
        "the paper scores from the first): honest clients blacklisted / recall.",
        "",
    ]
    return head + table(
        ["partition", "reference", *(f"unscored rounds: {w}" for w in warmups)],
        [[m, ref, *(c.get(w, "n/a") for w in warmups)] for (m, ref), c in cells.items()],
    )

"""The section of REPORT.md on the accuracy figure (final accuracy per scheme, FedBuff added).

Its table is :func:`sec_fig15`, its reading :func:`note_fig15`. Every figure of the reading is
computed from the summaries, the settings or the paper's numbers; no string literal here holds a
digit (a test checks it).
"""

from __future__ import annotations

from experiments.common import verdicts
from experiments.flr2sp import paper
from experiments.flr2sp.report.formats import (
    Summary,
    mean,
    ms,
    num,
    one,
    pct,
    span,
    table,
)
from experiments.flr2sp.report.paper_size import filter_table


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
        f"without the filter; the paper's severe degradation: {asp_verdict(rows)}."
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


#: The scheme each row is compared with: BSP with the same filter setting.
BASELINE = {"bsp": "bsp", "fl-r2sp": "bsp"}
NO_FILTER_BASELINE = "bsp-nofilter"


def versus_bsp(rows: list[Summary], r: Summary) -> str:
    """``r``'s final accuracy minus BSP's with the same filter setting, judged comparable
    within :data:`experiments.common.verdicts.ACCURACY_TOL` (empty for BSP itself)."""
    base = one(rows, model=r["model"], scheme=BASELINE.get(r["scheme"], NO_FILTER_BASELINE))
    if base is None or base is r:
        return ""
    seeds = min(r.get("n") or 0, base.get("n") or 0) or None
    return verdicts.accuracy_verdict(mean(r, "final_accuracy"), mean(base, "final_accuracy"), seeds)


def asp_verdict(rows: list[Summary]) -> str:
    """The paper's "ASP suffers severe degradation", judged by the accuracy rule: reproduced
    when ASP ends more than the tolerance below BSP without the filter, not reproduced when the
    two are comparable or ASP ends above."""
    asp, bsp = one(rows, scheme="asp"), one(rows, scheme=NO_FILTER_BASELINE)
    same = verdicts.comparable(mean(asp, "final_accuracy"), mean(bsp, "final_accuracy"))
    if same is None or asp is None:
        return "n/a"
    lower = (mean(asp, "final_accuracy") or 0.0) < (mean(bsp, "final_accuracy") or 0.0)
    word = "reproduced" if not same and lower else "**not reproduced**"
    return (
        f"{word} (rule: more than {verdicts.ACCURACY_TOL:g} below BSP without the filter; "
        f"ASP minus BSP {versus_bsp(rows, asp)})"
    )


def sec_fig15(d: dict) -> list[str]:
    rows = [
        [
            r["model"],
            r["scheme"],
            ms(r, "final_accuracy", 3),
            ms(r, "best_accuracy", 3),
            ms(r, "converged_at", 0),
            str(r.get("n")),
            versus_bsp(d["table"], r),
        ]
        for r in d["table"]
    ]
    head = ["model", "scheme", "final acc", "best acc", "converged at (s)", "seeds"]
    out = table([*head, "final acc minus BSP's (same filter setting)"], rows)
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

"""The section of REPORT.md on making the outlier filter help (the filter-rules item).

Its tables (:func:`sec_filter_rules`): per partition and case the seeds that ran, the final
accuracy, the paired gain over the filter switched off, honest clients blacklisted, recall,
bans refused by the cap and the time to the paper's stagnation rule; cells that did not run
say so; the same tables for the main job (``filter_rules_main_job``). Its readings
(:func:`note_filter_rules`, :func:`note_main_job`): each candidate rule's verdict by the rule
stated in :func:`experiments.flr2sp.filter_rules.verdicts`, per setting and over the laptop
partitions and the main job's together (:func:`joint_text`), the default that chooses and
whether that is the engine's default (read from
:class:`~fl_r2sp.fl.policies.params.OutlierParams`). No string literal here holds a digit (a
test checks it).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from experiments.common import verdicts
from experiments.common.conf import MAIN_JOB
from experiments.flr2sp import paper
from experiments.flr2sp.filter_rules import (
    DEFAULT_OVER,
    confirmation,
    engine_case,
    joint_default,
    record_item,
)
from experiments.flr2sp.report.formats import Summary, mean, ms, num, one, pct, table
from fl_r2sp.fl.policies.params import scheme_defaults

#: Failing seeds shown per candidate in the joint verdict (the rest are counted).
SHOWN = 3

#: What a cell that never runs stands for.
SAME_AS = {("oracle", "none"): "= off (no outliers to exclude)"}


def _stagnation(r: dict) -> str:
    """Mean time to the stagnation rule over the converged seeds, with how many converged."""
    done = round((mean(r, "converged") or 0.0) * r["n"])
    if not done:
        return f"cap (none of {r['n']} converged)"
    return f"{num(mean(r, 'converged_at'), 0)} s ({done} of {r['n']} converged)"


def _row(d: Summary, case: str, part: str) -> list[str]:
    r = one(d["table"], case=case, partition=part)
    if r is None:
        return [part, case, SAME_AS.get((case, part), "not run"), *[""] * 6]
    g = one(d.get("gains", []), case=case, partition=part)
    gain = (
        "–"
        if case == "off"
        else "n/a"
        if g is None
        else f"{100 * (mean(g, 'gain') or 0.0):+.1f} ± {100 * (g.get('gain_std') or 0.0):.1f} "
        f"points ({g['n']} paired)"
    )
    return [
        part,
        case,
        str(r["n"]),
        ms(r, "final_accuracy", 3),
        gain,
        f"{ms(r, 'honest_blacklisted', 1)} ({pct(mean(r, 'honest_share'))})",
        "–" if case == "off" or mean(r, "recall") is None else ms(r, "recall"),
        ms(r, "num_capped", 1),
        _stagnation(r),
    ]


def sec_filter_rules(d: Summary) -> list[str]:
    rows = [_row(d, case, part) for part in d["partitions"] for case in d["cases"]]
    head = [
        "partition",
        "case",
        "seeds",
        "final accuracy",
        "vs filter off (same seed)",
        "honest blacklisted (share)",
        "recall",
        "bans refused by the cap",
        "time to stagnation (virtual)",
    ]
    verdict = [
        [v["case"], v["status"], str(v["paired_seeds"]), "; ".join(v["why"]) or "–"]
        for v in d["verdicts"]
    ]
    return [
        *table(head, rows),
        "",
        *table(["candidate rule", "verdict", "fewest paired seeds", "failing seeds"], verdict),
    ]


#: A failing pair as the filter-rules item states it: ``<partition> seed <s>: <gain> accuracy``.
_PAIR = re.compile(r"^(?P<part>\S+) seed (?P<seed>\d+): [+-]\d+\.\d+ accuracy$")


def gains_in_points(d: Summary, runs_csv: Path) -> Summary:
    """``d`` with each failing pair of its verdicts restated in points from the runs'
    accuracies (``runs.csv``): older records state the gain as an accuracy with three
    decimals, which prints a loss of a fiftieth of a point as a negative zero."""
    with runs_csv.open() as fh:
        acc = {
            (r["case"], r["partition"], r["seed"]): r["final_accuracy"] for r in csv.DictReader(fh)
        }

    def restated(case: str, why: str) -> str:
        m = _PAIR.match(why)
        on = acc.get((case, m["part"], m["seed"])) if m else None
        off = acc.get(("off", m["part"], m["seed"])) if m else None
        if m is None or not on or not off:
            return why
        return f"{m['part']} seed {m['seed']}: {(float(on) - float(off)) * 100:+.2f} points"

    verdict = [{**v, "why": [restated(v["case"], w) for w in v["why"]]} for v in d["verdicts"]]
    return {**d, "verdicts": verdict}


def _engine(chosen: str) -> str:
    """Whether the engine's default (read from the code) is the default these records chose."""
    keys = scheme_defaults()
    knobs = (
        f"`outlier-filter = {str(keys['outlier-filter']).lower()}`, "
        f"`outlier-rule = {keys['outlier-rule']}`"
    )
    case = engine_case()
    if case == chosen:
        return f" It is the engine's default ({knobs}, `OutlierParams`)."
    what = "no case of this item" if case is None else f"`{case}`"
    return (
        f" The engine's default ({knobs}) is {what}, not the default these records choose: "
        "the code and the records disagree until one of them is updated."
    )


def _rule_results(d: Summary, where: str) -> str:
    """The paper rule's honest bans and the rules meeting the verdict rule in one setting."""
    paper_rule = [
        f"{pct(mean(r, 'honest_share'))} on `{r['partition']}` ({r['n']} seeds)"
        for r in d["table"]
        if r["case"] == "paper"
    ]
    met = [v["case"] for v in d["verdicts"] if v["status"] == "meets"]
    text = f"The paper's rule blacklists {', '.join(paper_rule)} of the honest clients. "
    text = text if paper_rule else ""
    return text + f"Rules meeting it on {where}: {', '.join(met) or 'none'}. "


def _one_seed(d: Summary) -> str:
    seeds = min((r["n"] for r in d["table"]), default=0)
    return " Some cells rest on one seed: an indication, not a measurement." if seeds <= 1 else ""


def joint_text(summaries: dict[str, Summary]) -> str:
    """The default chosen over the laptop partitions and the main job's (:data:`DEFAULT_OVER`),
    each candidate's joint verdict with its first failing seeds, and whether the engine agrees."""
    records = {s: summaries.get(record_item(s)) for s in DEFAULT_OVER}
    verdict, default = joint_default(records)
    absent = [f"`{s}`" for s, d in records.items() if d is None]
    parts = []
    for v in verdict:
        why = v["why"]
        shown = "; ".join(why[:SHOWN]) + ("; …" if len(why) > SHOWN else "")
        parts.append(
            f"`{v['case']}` {v['status']}"
            + (f" ({len(why)} failing: {shown})" if why else f" ({v['paired_seeds']} seeds)")
        )
    text = (
        f"Over both settings ({', '.join(f'`{s}`' for s in DEFAULT_OVER)}), every partition "
        f"and paired seed: {', '.join(parts)}. "
    )
    if absent:
        text += f"Not recorded: {', '.join(absent)}. "
    if default == "off":
        text += (
            "No rule meets it over both, so the default is the filter switched off "
            "(`outlier-filter = false`)."
        )
    else:
        text += f"The default is `{default}`."
    return text + _engine(default)


def paper_claim(d: Summary) -> str:
    """The paper's claim for its filter (without it both schemes lose about a tenth of their
    accuracy) judged on the partitions with outliers: the paper's rule's paired gain over the
    filter off, relative to its accuracy, as a reduction against the paper's
    (:func:`experiments.common.verdicts.reduction_verdict`)."""
    parts = []
    for g in d.get("gains", []):
        if g["case"] != "paper" or g["partition"] == "none":
            continue
        acc = mean(one(d["table"], case="paper", partition=g["partition"]), "final_accuracy")
        gain = g.get("gain_mean")
        rel = None if gain is None or not acc else gain / acc
        parts.append(
            f"on `{g['partition']}` the paper's rule {'gains' if (gain or 0) >= 0 else 'costs'} "
            f"{num(abs(100 * (gain or 0)), 1)} points ({pct(rel)} of its accuracy; "
            + verdicts.reduction_verdict(rel, paper.FIG15_FILTER_LOSS, seeds=g.get("n"))
            + ")"
        )
    if not parts:
        return ""
    return (
        f"**The paper's claim** (without the filter both schemes lose about "
        f"{pct(paper.FIG15_FILTER_LOSS)} of their accuracy, so the filter should gain that): "
        + "; ".join(parts)
        + ". "
    )


def note_filter_rules(d: Summary, summaries: dict[str, Summary]) -> str:
    rule = d["rule"]
    text = (
        "**Verdict rule** (stated before the runs): a rule may become the default when, on every "
        "partition and for every seed paired with the filter-off run, its final accuracy minus "
        f"the filter-off accuracy is at least {num(rule['min_gain'], 3)}, it blacklists at most "
        f"{pct(rule['max_honest_share'])} of the honest clients in every run, and every "
        f"partition has at least {rule['min_seeds']} paired seeds; one failing pair or run "
        "fails it; no failure with fewer seeds is too little evidence. The default is chosen by "
        "it over these partitions and the main job's together (the main job is what users run). "
    )
    text += _rule_results(d, "these partitions") + paper_claim(d)
    if summaries.get(record_item(MAIN_JOB)) is None:
        text += joint_text(summaries)
    else:
        text += "The default over both: the next section."
    return text + _one_seed(d)


def note_main_job(d: Summary, summaries: dict[str, Summary]) -> str:
    text = (
        "The main job (`flwr run .` with the app's defaults: the digits MLP, no convergence "
        "window, so no time to stagnation) under the same cases, partitions and verdict rule. "
    )
    text += _rule_results(d, "the main job's partitions") + paper_claim(d)
    return text + joint_text(summaries) + _one_seed(d)


def note_mid(d: Summary, summaries: dict[str, Summary]) -> str:
    """The mid-scale reading: the same verdicts, and whether they confirm the default chosen
    over :data:`DEFAULT_OVER` (:func:`~experiments.flr2sp.filter_rules.confirmation`)."""
    records = {s: summaries.get(record_item(s)) for s in DEFAULT_OVER}
    _, default = joint_default(records)
    status, absent = confirmation(d["verdicts"], d.get("gains", []), default)
    over = " and ".join(f"`{s}`" for s in DEFAULT_OVER)
    text = (
        "The mid-scale CPU setting, between the laptop scale and the paper's (the same "
        "CNN, cases, partitions and verdict rule). It does not choose the default: it confirms "
        f"or contradicts the one chosen over {over}. "
    )
    text += _rule_results(d, "this scale's partitions") + paper_claim(d)
    text += (
        "**Confirmation rule** (stated before these runs): a rule chosen as the default is "
        "confirmed when it meets the verdict rule here too and contradicted when it fails here; "
        "the filter switched off is contradicted when any candidate meets it here, confirmed "
        "when every candidate that ran here fails it, else open; candidates that never ran "
        f"here are left out and named. The default chosen over {over}, `{default}`, is "
        f"**{status}** at this scale."
    )
    if absent:
        text += f" Not run at this scale: {', '.join(f'`{c}`' for c in absent)}."
    if any(r["n"] < d["rule"]["min_seeds"] for r in d["table"]) or d.get("missing"):
        text += " Some cells have fewer seeds than the rule asks (the table's seed counts)."
    return text + _one_seed(d)

"""The section of REPORT.md on outlier scoring at the paper's per-client setting (which cosine
reference).

Its table is :func:`sec_outliers_scoring`, its reading :func:`note_outliers_scoring`. Every
figure of the reading is computed from the summaries, the settings or the paper's numbers; no
string literal here holds a digit (a test checks it).
"""

from __future__ import annotations

from experiments.flr2sp.report.formats import (
    Summary,
    mean,
    ms,
    num,
    pct,
    span,
    table,
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

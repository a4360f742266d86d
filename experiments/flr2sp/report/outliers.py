"""The section of REPORT.md on the outlier filter's precision, recall and false positives.

Its table is :func:`sec_outliers`, its reading :func:`note_outliers`. Every figure of the
reading is computed from the summaries, the settings or the paper's numbers; no string literal
here holds a digit (a test checks it).
"""

from __future__ import annotations

from experiments.flr2sp.report.formats import (
    Summary,
    mean,
    ms,
    num,
    pct,
    table,
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

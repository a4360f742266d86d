"""Tables of REPORT.md, part two: Fig. 18 with its small-group cost variants, the C sweep
and the two outlier items."""

from __future__ import annotations

from experiments.flr2sp import paper
from experiments.flr2sp.report_tables import ms, table


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

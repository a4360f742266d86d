"""Outlier filter: blacklist precision/recall, and false positives without outliers.

* With outliers (25% of clients Dirichlet alpha 0.1): precision and recall of
  the blacklist against the true outlier ids, for FL-R²SP and BSP (the Fig. 15
  runs).
* Without outliers: every client alpha 10 (``outlier_fraction = 0``), and
  every client alpha 0.3 (heavily skewed but all alike). Any blacklisted
  client is then a false positive: rate = blacklisted / clients.

Rule (paper): cosine < 0.5 against the reference delta (``cosine-reference``)
for 3 consecutive rounds. The paper prints no precision/recall.

Diagnostic from the runs' ``client_score`` records: the median cosine of
outliers and of regular clients over all scored updates, and the share of
group rounds in which the outliers' median is *above* the regular clients'
(the filter then cannot catch them first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.common import eta
from experiments.common.conf import scale_settings
from experiments.common.run_cache import aggregate, finish, load_jobs, models, parse_args
from experiments.flr2sp.fig15 import scheme_run
from experiments.flr2sp.runs import training

#: name -> differences of the no-outlier runs (FL-R²SP, filter on).
CLEAN: dict[str, dict[str, Any]] = {
    "alpha10": dict(outlier_fraction=0.0, alpha=10.0),
    "alpha0.3": dict(outlier_fraction=0.0, alpha=0.3),
}
METRICS = (
    "precision",
    "recall",
    "num_blacklisted",
    "false_positive_rate",
    "final_accuracy",
    "median_cosine_outlier",
    "median_cosine_regular",
    "rounds_outliers_higher",
)


def cosine_diagnostic(args, rec: dict) -> dict:
    """Median cosines of outliers and regular clients, and rounds the outliers score higher."""
    outliers = set(rec["summary"].get("policy_known_outliers") or [])
    rows = [
        r
        for r in load_jobs(args, rec, "records")
        if r["kind"] == "client_score" and not r.get("straggler")
    ]
    out = [r["cosine"] for r in rows if r["cid"] in outliers]
    reg = [r["cosine"] for r in rows if r["cid"] not in outliers]
    higher = []
    for rnd in sorted({r["round"] for r in rows}):
        o = [r["cosine"] for r in rows if r["round"] == rnd and r["cid"] in outliers]
        g = [r["cosine"] for r in rows if r["round"] == rnd and r["cid"] not in outliers]
        if o and g:
            higher.append(float(np.median(o) > np.median(g)))
    return dict(
        median_cosine_outlier=float(np.median(out)) if out else None,
        median_cosine_regular=float(np.median(reg)) if reg else None,
        rounds_outliers_higher=float(np.mean(higher)) if higher else None,
    )


def row(model: str, case: str, seed: int, summary: dict, n: int) -> dict:
    caught = summary.get("policy_num_blacklisted") or 0
    clean = case in CLEAN
    return dict(
        model=model,
        case=case,
        seed=seed,
        precision=None if clean else summary.get("policy_blacklist_precision"),
        recall=None if clean else summary.get("policy_blacklist_recall"),
        num_blacklisted=caught,
        false_positive_rate=caught / n if clean else None,
        final_accuracy=summary.get("final_accuracy"),
    )


def main(argv=None) -> None:
    args = parse_args("outliers", __doc__, argv)
    n = scale_settings("training", args.scale)["num_partitions"]
    rows, missing = [], []
    eta.plan(len(args.seeds) * (len(CLEAN) + 2))
    for model in models(args, "training")[:1]:  # the first model only: the filter is model-agnostic
        for seed in args.seeds:
            # Own runs first: the shared Fig. 15 runs are likely cached by then.
            runs = {
                case: training(args, seed, "fl-r2sp", model, **diff) for case, diff in CLEAN.items()
            }
            runs.update({s: scheme_run(args, seed, model, s) for s in ("fl-r2sp", "bsp")})
            # None: not cached under --skip-training.
            missing += [dict(model=model, case=c, seed=seed) for c, rec in runs.items() if not rec]
            rows += [
                {**row(model, case, seed, rec["summary"], n), **cosine_diagnostic(args, rec)}
                for case, rec in runs.items()
                if rec
            ]
    finish(args, rows, aggregate(rows, ("model", "case"), METRICS), {"missing": missing})


if __name__ == "__main__":
    main()

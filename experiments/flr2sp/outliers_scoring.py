"""Outlier scoring at the paper's per-client setting: which cosine reference separates outliers?

Setting (``docs/paper-notes.md`` §2.4): 128 clients, 8 groups of 16, C = 0.75,
tau = 100, lr 0.01, batch 32, the full CIFAR-10 train split (390 samples per
client), the CNN, 25% outliers (Dirichlet 0.1, the others Dirichlet 10), 10
group rounds per group (80 group applications), FL-R²SP, in both partition
modes: ``paper`` (plain Dirichlet draws) and ``paper-strict`` (the shares the
paper states: outliers one class over 97%, regular clients every class at
least 7%; :mod:`fl_r2sp.datasets.paper_strict`). ``--scale smoke`` runs a
digits/MLP miniature for tests; ``laptop`` and ``paper`` both run the setting
above.

**Scoring shares training.** Each (mode, seed) is one run with the filter
*off* and ``score-all-references`` on: every scored update is recorded with
its cosine under every reference (``group``, ``group-loo``, ``global-change``,
``global-step``). The β = 0.5 / 3-round rule is then replayed offline per
reference on the recorded series. Because no score acts, the trajectory and
the score series are exactly those of a run with that reference's filter on
*until its first blacklisting*; after it, a real run trains on fewer clients
and its later scores differ. The figures are therefore the blacklisting
statistics of a trajectory without the filter: which clients each reference
would blacklist, if blacklisting did not change the training.

The replay is repeated with the first 2, 4 and 6 group rounds left unscored
(:data:`WARMUPS`; the policy's ``outlier-warmup``, not the paper's rule), to
show how much of the outcome the first rounds decide.

Per reference and seed: honest (regular) clients that would be blacklisted,
precision and recall against the true outlier ids, the group round of the
first blacklisting, and per group round the median cosine of outliers and of
regular clients. Per mode and seed: the realised class shares of the
partition (outliers' top share, regular clients' smallest share).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from experiments.common import eta
from experiments.common.run_cache import aggregate, build_config, finish, load_jobs, parse_args
from experiments.flr2sp.runs import training
from fl_r2sp.fl.policies.reference_scores import blacklist_quality, replay_blacklist, score_field
from fl_r2sp.fl.policies.scoring import REFERENCE_KINDS

MODES = ("paper", "paper-strict")
#: Differences from the scale's training settings (explicit reference: the key
#: must not depend on the default, and with the filter off it changes nothing).
SETTING = dict(
    rounds=10,
    convergence_window=0,
    outlier_filter=False,
    score_all_references=True,
    cosine_reference="global-change",
)
BETA, ROUNDS = 0.5, 3
#: Group rounds left unscored in the offline replay: 0 is the paper's rule; the others show
#: how much of the result comes from the first rounds (the policy's ``outlier-warmup``).
WARMUPS = (0, 2, 4, 6)
METRICS = (
    "honest_blacklisted",
    "precision",
    "recall",
    "blacklisted",
    "first_blacklist_round",
    "median_outlier",
    "median_regular",
)


#: Smoke only: the digits pools (~144 per class) cannot hold two outliers of 179 samples.
SMOKE = dict(samples_per_client=60)


def setting(args) -> dict[str, Any]:
    """:data:`SETTING`, plus :data:`SMOKE` at the smoke scale."""
    return {**SETTING, **(SMOKE if args.scale == "smoke" else {})}


def run_of(args, seed: int, mode: str, model: str) -> dict[str, Any] | None:
    """The cached (or fresh) scoring run of ``mode`` and ``seed``."""
    return training(args, seed, "fl-r2sp", model, partitioner=mode, **setting(args))


def scores_of(args, rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's collected-update scores (``client_score`` rows), in policy order."""
    rows = [r for r in load_jobs(args, rec, "records") if r["kind"] == "client_score"]
    return [r for r in rows if not r.get("straggler")]


def reference_row(
    kind: str, scores: list[dict[str, Any]], outliers: frozenset[int], warmup: int = 0
) -> dict:
    """Replayed blacklist quality and median cosines of one reference.

    ``warmup`` (default 0, the paper) group rounds are left unscored, as the policy's
    ``outlier-warmup`` would.
    """
    field = score_field(kind)
    scores = [r for r in scores if r["round"] >= warmup]
    banned = replay_blacklist(((r["cid"], r[field]) for r in scores), BETA, ROUNDS)
    first = min(banned.values(), default=None)
    out = [r[field] for r in scores if r["cid"] in outliers]
    reg = [r[field] for r in scores if r["cid"] not in outliers]
    return dict(
        reference=kind,
        warmup=warmup,
        **blacklist_quality(banned, outliers),
        first_blacklist_round=None if first is None else scores[first]["round"],
        median_outlier=float(np.median(out)) if out else None,
        median_regular=float(np.median(reg)) if reg else None,
    )


def per_round(kind: str, scores: list[dict[str, Any]], outliers: frozenset[int]) -> list[dict]:
    """Median cosine of outliers and regular clients per group round."""
    field, rows = score_field(kind), []
    for rnd in sorted({r["round"] for r in scores}):
        mine = [r for r in scores if r["round"] == rnd]
        out = [r[field] for r in mine if r["cid"] in outliers]
        reg = [r[field] for r in mine if r["cid"] not in outliers]
        rows.append(
            dict(
                reference=kind,
                round=rnd,
                median_outlier=float(np.median(out)) if out else None,
                median_regular=float(np.median(reg)) if reg else None,
            )
        )
    return rows


def partition_of(args, seed: int, mode: str, model: str) -> tuple[dict[str, Any], frozenset[int]]:
    """Realised class shares of the run's partition, and its outlier ids (loads the data)."""
    from fl_r2sp.fl.clients.runtime import data_for

    cfg = build_config(
        "training",
        args.scale,
        seed,
        strategy="fl-r2sp",
        model=model,
        partitioner=mode,
        **setting(args),
    )
    data = data_for(cfg)
    shares = data.partition.class_shares(data.train.y, data.train.num_classes)
    out = np.array(sorted(data.partition.outlier_ids), dtype=np.int64)
    reg = np.setdiff1d(np.arange(cfg.num_partitions), out)
    row = dict(
        mode=mode,
        seed=seed,
        outlier_top_median=float(np.median(shares[out, 0])),
        outlier_top_min=float(shares[out, 0].min()),
        outlier_top_over_097=float(np.mean(shares[out, 0] > 0.97)),
        regular_min_median=float(np.median(shares[reg, 1])),
        regular_min_min=float(shares[reg, 1].min()),
        regular_min_at_least_007=float(np.mean(shares[reg, 1] >= 0.07)),
        samples_per_client=int(data.partition.sizes()[0]),
    )
    return row, frozenset(int(c) for c in out)


def main(argv=None) -> None:
    args = parse_args("outliers_scoring", __doc__, argv)
    if args.scale == "laptop":  # this experiment is the cheap paper-size check
        args = dataclasses.replace(args, scale="paper")
    model = "mlp" if args.scale == "smoke" else "cnn"
    rows, rounds, shares, costs = [], [], [], []
    eta.plan(len(args.seeds) * len(MODES))
    for seed in args.seeds:  # seed-major: the first seeds give a full picture early
        for mode in MODES:
            share, outliers = partition_of(args, seed, mode, model)
            shares.append(share)
            rec = run_of(args, seed, mode, model)
            if rec is None:  # --skip-training and not cached
                continue
            scores = scores_of(args, rec)
            costs.append(
                dict(
                    mode=mode,
                    seed=seed,
                    run_seconds=rec.get("run_seconds"),
                    executor=rec["config"].get("executor", "serial"),
                    compute_device=rec["config"].get("compute-device", "auto"),
                    jobs=len(load_jobs(args, rec)),
                    scores=len(scores),
                )
            )
            for kind in REFERENCE_KINDS:
                for warmup in WARMUPS:
                    rows.append(
                        dict(mode=mode, seed=seed, **reference_row(kind, scores, outliers, warmup))
                    )
                rounds += [
                    dict(mode=mode, seed=seed, **r) for r in per_round(kind, scores, outliers)
                ]
    share_keys = [k for k in (shares[0] if shares else {}) if k not in ("mode", "seed")]
    finish(
        args,
        rows,
        aggregate([r for r in rows if r["warmup"] == 0], ("mode", "reference"), METRICS),
        {
            "by_warmup": aggregate(rows, ("mode", "reference", "warmup"), METRICS),
            "per_round": aggregate(
                rounds, ("mode", "reference", "round"), ("median_outlier", "median_regular")
            ),
            "shares": aggregate(shares, ("mode",), share_keys),
            "cost": costs,
            "rule": {"beta": BETA, "rounds": ROUNDS},
        },
    )


if __name__ == "__main__":
    main()

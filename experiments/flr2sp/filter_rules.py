"""Making the filter help: which outlier rule, if any, beats the filter switched off.

FL-R²SP, real training at the scale's size (laptop: CNN on CIFAR-10, 32 clients in 4 groups
of 8, C = 0.75), one run per (case, partition, seed), paired by seed. ``--scale main-job`` runs
the main job instead (``flwr run .``: the app's defaults, digits MLP, 32 clients in 4 groups of
8, tau 20, lr 0.1, 60 global updates, evaluated every 4, no convergence window:
``conf.main_job_settings``), which is what users run. Each setting's records go to their own
folder (:func:`record_item`: ``filter_rules`` at laptop scale, ``filter_rules_main_job``, ...).
``--cases`` and ``--partitions`` (comma-separated; default all) restrict the sweep.

* cases (:data:`CASES`): the filter off; ``oracle`` (the known outliers excluded at t = 0:
  the ceiling of any filter); the paper's rule (cosine < 0.5 for 3 rounds); ``relative``
  (below the group round's median by more than k = 3 robust deviations, floor 0.1, for
  3 rounds, cap 0.25); the paper's and the relative rule with the first 4 group rounds
  unscored (``outlier-warmup = 4``); the relative rule with probation (a banned client
  re-scored after :data:`PROBATION` group rounds, readmitted when it agrees again); the
  candidate default is :data:`CANDIDATE`;
* partitions (:data:`PARTITIONS`): ``paper`` (25% of clients Dirichlet alpha 0.1, the rest
  alpha 10), ``paper-strict`` (the paper's stated shares) and ``none`` (no outliers: every
  client alpha 10; every blacklisted client is honest). ``oracle`` on ``none`` excludes
  nobody, so it is the filter-off run and is not run again.

Why k = 3 and floor 0.1 (``docs/paper-notes.md`` §2.7): on the laptop CIFAR runs the honest
median cosine is about 0.55 and the outliers' 0.44 over all rounds (the ``outliers`` item), the
outliers scoring *above* the honest clients in group rounds 0-2; on digits the honest median is
0.75-0.86 and the outliers' 0.18-0.36 from group round 4 on. A cut at least 0.3 below the
round's median then flags the digits outliers and no honest client of either data set for a
normal dip, and the warm-up variants skip the rounds where outliers look best.

Runs go in priority order: every seed of the first four cases, partition by partition, then the
warm-up and probation variants (:data:`LATER`), so an interrupted sweep leaves the most useful
cells done. Per run: final accuracy, honest clients blacklisted (count and share of the honest
clients), recall (blacklisted known outliers / known outliers), bans refused by the cap, and the
time to the paper's stagnation rule (``converged_at``: the start of 10 evaluations without a gain
above the tolerance; None when the run stopped at the round cap; always None on the main job, which
has no convergence window: its users get the model after 60 updates, and the verdict reads only the
final accuracy). Pairs: each case minus the filter-off run of the same partition and seed. The
verdict rule is :func:`verdicts`; the default is chosen by it over the laptop partitions and the
main job's together (:func:`joint_default`)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from experiments.common.conf import MAIN_JOB, SCALES, scale_settings
from experiments.common.run_cache import Args, aggregate, finish, models, parse_args
from experiments.flr2sp.runs import training
from fl_r2sp.fl.policies.params import scheme_defaults

#: The item's name (its module) and its laptop records' folder (:func:`record_item`).
ITEM = "filter_rules"

_ON = dict(outlier_filter=True)
_RELATIVE = dict(_ON, outlier_rule="relative", outlier_mad_k=3.0, outlier_mad_floor=0.1)
#: Group rounds left unscored by the warm-up variants (the study's replay: outliers score
#: above the honest clients in group rounds 0-2).
WARMUP = 4
#: Group rounds after which the probation variant re-scores a banned client (``docs/paper-notes.md``
#: §2.7: K = 2 readmitted 2 true outliers in the digits sanity run, hence measured here).
PROBATION = 2

#: Case -> knobs (every filter knob the case depends on is explicit, so a changed engine
#: default never changes what a case means).
CASES: dict[str, dict[str, Any]] = {
    "off": dict(outlier_filter=False),
    "paper": dict(_ON, outlier_rule="paper"),
    "relative": _RELATIVE,
    "oracle": dict(_ON, outlier_rule="oracle"),
    "paper-warmup": dict(_ON, outlier_rule="paper", outlier_warmup=WARMUP),
    "relative-warmup": dict(_RELATIVE, outlier_warmup=WARMUP),
    "relative-probation": dict(_RELATIVE, outlier_probation=PROBATION),
}
#: Cases run after every seed of the others (the brief's priority order).
LATER = ("paper-warmup", "relative-warmup", "relative-probation")
#: The rule proposed as the default, if the measurements bear it out.
CANDIDATE = "relative-warmup"
#: Cases that may become the default (never ``oracle``: it needs the true outlier ids).
CANDIDATES = ("paper", "relative", "paper-warmup", "relative-warmup", "relative-probation")

#: Partition -> knobs.
PARTITIONS: dict[str, dict[str, Any]] = {
    "paper": dict(partitioner="paper"),
    "paper-strict": dict(partitioner="paper-strict"),
    "none": dict(partitioner="paper", outlier_fraction=0.0),
}

#: Smoke scale only (digits, 8 clients of about 180 samples): a ``paper-strict`` outlier's
#: ~97% of one class does not fit a digit's pool of ~140 samples, so its clients take 100.
_SMOKE_STRICT = dict(samples_per_client=100)

#: The verdict rule: the default's accuracy minus the filter-off accuracy of the same seed is
#: at least this on every partition and seed ...
MIN_GAIN = 0.0
#: ... every run blacklists at most this share of the honest clients ...
MAX_HONEST_SHARE = 0.05
#: ... and each partition has at least this many paired seeds (stated before the runs).
MIN_SEEDS = 3

METRICS = (
    "final_accuracy",
    "honest_blacklisted",
    "honest_share",
    "recall",
    "num_capped",
    "converged",
    "converged_at",
)


def planned(
    seeds: Sequence[int],
    cases: Sequence[str] = tuple(CASES),
    partitions: Sequence[str] = tuple(PARTITIONS),
) -> list[tuple[str, str, int]]:
    """(case, partition, seed) in run order; ``oracle`` on ``none`` is the filter-off run.

    ``cases`` and ``partitions`` (default: all, in :data:`CASES` / :data:`PARTITIONS` order)
    restrict the sweep; the order stays the priority order.
    """
    first = [c for c in CASES if c in cases and c not in LATER]
    later = [c for c in LATER if c in cases]
    parts = [p for p in PARTITIONS if p in partitions]
    out = []
    for group in (first, later):
        for seed in seeds:
            # Partition by partition: a cut-short sweep leaves whole partitions compared.
            out += [
                (case, part, seed)
                for part in parts
                for case in group
                if not (case == "oracle" and part == "none")
            ]
    return out


def run_row(case: str, partition: str, seed: int, summary: Mapping[str, Any], n: int) -> dict:
    """One run's figures: accuracy, honest bans (count, share), recall, cap refusals, time."""
    known = set(summary.get("policy_known_outliers") or [])
    banned = set(summary.get("policy_blacklisted") or [])
    honest = len(banned - known)
    on = CASES[case]["outlier_filter"]
    return dict(
        case=case,
        partition=partition,
        seed=seed,
        final_accuracy=summary.get("final_accuracy"),
        honest_blacklisted=honest,
        honest_share=honest / (n - len(known)),
        recall=len(banned & known) / len(known) if on and known else None,
        num_capped=summary.get("policy_num_capped"),
        converged=float(summary.get("converged_at") is not None),
        converged_at=summary.get("converged_at"),
    )


def pairs(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each filtered run's accuracy minus the filter-off run of the same partition and seed."""
    off = {(r["partition"], r["seed"]): r for r in rows if r["case"] == "off"}
    out = []
    for r in rows:
        base = off.get((r["partition"], r["seed"]))
        if r["case"] == "off" or base is None:
            continue
        if r["final_accuracy"] is None or base["final_accuracy"] is None:
            continue
        gain = r["final_accuracy"] - base["final_accuracy"]
        out.append(dict(case=r["case"], partition=r["partition"], seed=r["seed"], gain=gain))
    return out


def verdicts(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per candidate rule: ``meets``, ``fails`` or ``too few seeds``, and why.

    Rule (stated before the runs): a rule *meets* the criterion when on every partition its
    accuracy minus the filter-off accuracy of the same seed is >= :data:`MIN_GAIN` for every
    paired seed, every run blacklists at most :data:`MAX_HONEST_SHARE` of the honest clients,
    and every partition has >= :data:`MIN_SEEDS` paired seeds. A single failing pair or run
    *fails* it; no failure with fewer seeds is *too few seeds*.
    """
    gains = pairs(rows)
    out = []
    for case in CANDIDATES:
        why, fewest = [], None
        for part in PARTITIONS:
            mine = [g for g in gains if g["case"] == case and g["partition"] == part]
            runs = [r for r in rows if r["case"] == case and r["partition"] == part]
            fewest = len(mine) if fewest is None else min(fewest, len(mine))
            why += [
                f"{part} seed {g['seed']}: {g['gain'] * 100:+.2f} points"
                for g in mine
                if g["gain"] < MIN_GAIN
            ]
            why += [
                f"{part} seed {r['seed']}: {r['honest_blacklisted']} honest blacklisted "
                f"({r['honest_share']:.0%})"
                for r in runs
                if r["honest_share"] > MAX_HONEST_SHARE
            ]
        status = "fails" if why else ("meets" if (fewest or 0) >= MIN_SEEDS else "too few seeds")
        out.append(dict(case=case, status=status, paired_seeds=fewest or 0, why=why))
    return out


def chosen_default(gains: Sequence[Mapping[str, Any]], verdict: Sequence[Mapping]) -> str:
    """The candidate that meets the rule with the largest mean paired gain, else ``off``.

    ``gains`` are cells of ``aggregate(pairs(rows), ("case", "partition"), ("gain",))`` (their
    ``gain_mean`` and ``n``), of one setting or of several: the mean is over every pair.
    """
    total: dict[str, tuple[float, int]] = {}
    for g in gains:
        s, n = total.get(g["case"], (0.0, 0))
        total[g["case"]] = (s + (g["gain_mean"] or 0.0) * g["n"], n + g["n"])
    met = [v["case"] for v in verdict if v["status"] == "meets"]
    return max(met, key=lambda c: total[c][0] / total[c][1] if c in total else 0.0, default="off")


#: The settings the default is chosen over: the laptop scale's partitions and the
#: main job's, since the main job is what users run.
DEFAULT_OVER = ("laptop", MAIN_JOB)


def joint_verdicts(per_setting: Mapping[str, Sequence[Mapping] | None]) -> list[dict[str, Any]]:
    """The rule of :func:`verdicts` over several settings (setting -> its verdicts; None: not
    recorded): a candidate *meets* it when it meets it in every setting, *fails* it when it
    fails in any (its failing seeds prefixed by the setting), else *too few seeds*;
    ``paired_seeds`` is the fewest over every partition of every setting.

    This is the rule applied to the settings' runs together, partition by partition.
    """
    out = []
    for case in CANDIDATES:
        mine = [
            (name, next((v for v in vs or [] if v["case"] == case), None))
            for name, vs in per_setting.items()
        ]
        why = [f"{name} {w}" for name, v in mine if v is not None for w in v["why"]]
        fewest = min((v["paired_seeds"] if v else 0 for _, v in mine), default=0)
        status = "fails" if why else ("meets" if fewest >= MIN_SEEDS else "too few seeds")
        out.append(dict(case=case, status=status, paired_seeds=fewest, why=why))
    return out


def joint_default(records: Mapping[str, Mapping[str, Any] | None]) -> tuple[list[dict], str]:
    """The verdicts and the default over several settings' records (setting -> its
    ``summary.json``, None when not recorded): :func:`joint_verdicts`, then
    :func:`chosen_default` over every setting's pairs."""
    verdict = joint_verdicts({k: (d or {}).get("verdicts") for k, d in records.items()})
    gains = [g for d in records.values() for g in (d or {}).get("gains", [])]
    return verdict, chosen_default(gains, verdict)


#: The setting that confirms the default chosen over :data:`DEFAULT_OVER` (the study's
#: mid-scale CPU check: 64 clients, tau 50); it does not choose.
CONFIRMING = "mid"


def confirmation(
    verdict: Sequence[Mapping[str, Any]], gains: Sequence[Mapping[str, Any]], default: str
) -> tuple[str, list[str]]:
    """Whether one setting's verdicts confirm ``default``, chosen over other settings.

    Rule (stated before the mid-scale runs): for a rule chosen as the default, *confirmed* when
    it meets :func:`verdicts`' rule on this setting too, *contradicted* when it fails there,
    else *open*. For ``off`` (no rule met it elsewhere): *contradicted* when a candidate meets
    the rule on this setting (the filter would help at this size after all), *confirmed* when
    at least one candidate ran here and every candidate that ran fails, else *open* (a rule
    that ran without a failure on too few seeds). Candidates that never ran here (no pair in
    ``gains``) are left out of the rule and named.

    Returns
    -------
    tuple of (str, list of str)
        The status and the candidates that never ran on this setting.
    """
    # Candidates only: oracle (an experiment knob, never a default) is in the pairs too.
    ran = {g["case"] for g in gains if g.get("n") and g["case"] in CANDIDATES}
    status = {v["case"]: v["status"] for v in verdict}
    absent = [c for c in CANDIDATES if c not in ran]
    if default != "off":
        mine = status.get(default)
        return {"meets": "confirmed", "fails": "contradicted"}.get(mine or "", "open"), absent
    if any(status.get(c) == "meets" for c in ran):
        return "contradicted", absent
    if ran and all(status.get(c) == "fails" for c in ran):
        return "confirmed", absent
    return "open", absent


def engine_case() -> str | None:
    """The case whose filter knobs are all the engine's defaults (:class:`OutlierParams`).

    ``off`` when the engine's filter is off; None when no case runs the engine's default.
    """
    defaults = scheme_defaults()
    for case, knobs in CASES.items():
        if all(defaults[k.replace("_", "-")] == v for k, v in knobs.items()):
            return case
    return None


def collect(
    args: Args, model: str, n: int, plan: Sequence[tuple[str, str, int]]
) -> tuple[list[dict], list[dict]]:
    """Run (or load) every planned run; the rows and the runs left out (not cached)."""
    rows, missing = [], []
    for case, part, seed in plan:
        knobs = {**CASES[case], **PARTITIONS[part]}
        if args.scale == "smoke" and part == "paper-strict":
            knobs.update(_SMOKE_STRICT)
        rec = training(args, seed, "fl-r2sp", model, **knobs)
        if rec is None:  # not cached under --skip-training
            missing.append(dict(case=f"{case} / {part}", seed=seed))
            continue
        rows.append(run_row(case, part, seed, rec["summary"], n))
    return rows, missing


def record_item(scale: str) -> str:
    """The records' folder under ``--out``: ``filter_rules`` at laptop scale (the committed
    laptop records), ``filter_rules_<scale>`` for any other scale or the main job, so no
    setting's records overwrite another's."""
    return ITEM if scale == "laptop" else f"{ITEM}_{scale.replace('-', '_')}"


def _names(text: str, known: Sequence[str], flag: str) -> tuple[str, ...]:
    """Comma-separated names, each one of ``known`` (else exit naming them); '' = all."""
    names = tuple(s.strip() for s in text.split(",") if s.strip()) or tuple(known)
    unknown = [s for s in names if s not in known]
    if unknown:
        raise SystemExit(f"{flag}: unknown {unknown}; choose from {', '.join(known)}")
    return names


def main(argv: Sequence[str] | None = None) -> None:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--cases", default="", help="comma-separated cases (default: all)")
    extra.add_argument("--partitions", default="", help="comma-separated partitions (default: all)")
    ns, rest = extra.parse_known_args(argv)
    args = parse_args(ITEM, __doc__, rest, scales=(*SCALES, MAIN_JOB))
    args = dataclasses.replace(args, item=record_item(args.scale))
    cases = _names(ns.cases, tuple(CASES), "--cases")
    parts = _names(ns.partitions, tuple(PARTITIONS), "--partitions")
    n = scale_settings("training", args.scale)["num_partitions"]
    model = models(args, "training")[0]  # the filter is model-agnostic: the first model only
    rows, missing = collect(args, model, n, planned(args.seeds, cases, parts))
    table = aggregate(rows, ("case", "partition"), METRICS)
    gains = aggregate(pairs(rows), ("case", "partition"), ("gain",))
    verdict = verdicts(rows)
    extra_fields = dict(
        model=model,
        clients=n,
        gains=gains,
        verdicts=verdict,
        default=chosen_default(gains, verdict),
        candidate=CANDIDATE,
        cases=[c for c in CASES if c in cases],
        partitions=[p for p in PARTITIONS if p in parts],
        rule=dict(min_gain=MIN_GAIN, max_honest_share=MAX_HONEST_SHARE, min_seeds=MIN_SEEDS),
        missing=missing,
    )
    finish(args, rows, table, extra_fields)


if __name__ == "__main__":
    main()

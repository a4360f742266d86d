"""Fig. 15 and Table IV's convergence at the paper's size, from the cached runs only.

The paper's training setting (``conf.TRAINING["paper"]``): 128 clients, 8
groups of 16, C = 0.75, tau = 100, SGD lr 0.01, batch 32, the full CIFAR-10
train split, the mixed-alpha partition, convergence = test accuracy stagnant
for 10 evaluations. These runs are computed elsewhere (a GPU, or CPU in the
background) by ``experiments.flr2sp.run_parallel`` into the run cache; this item
never trains. It tabulates what is cached, whatever ``--scale`` says:

* per run: final / best accuracy, convergence time, blacklisting, and how it
  was computed (executor, device, wall seconds, code version) plus how many
  other runs were being computed at the same time (from the records' end
  times and durations: runs sharing one machine);
* per scheme: mean ± std over the cached seeds (Fig. 15), the filter's
  gain, and per seed with both runs cached the Table IV convergence pair
  (``experiments.flr2sp.table4.conv_row``);
* every run of the scale's models x schemes x seeds that is not cached,
  with the command that would compute it, and the measured wall seconds per
  BSP-round equivalent of the model's cached runs.

Run: ``python -m experiments.flr2sp.paper_scale --reuse-runs any`` (the runs of older code
are reused only when asked).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from experiments.common.conf import round_units
from experiments.common.run_cache import aggregate, finish, models, parse_args
from experiments.flr2sp.fig15 import METRICS as FIG15_METRICS
from experiments.flr2sp.fig15 import SCHEMES, filter_loss, filter_pairs, plot, scheme_run
from experiments.flr2sp.table4 import CONV_METRICS, conv_row

METRICS = (
    *FIG15_METRICS,
    "num_blacklisted",
    "precision",
    "recall",
    "run_seconds",
    "wall_s_per_round",
    "concurrent_runs",
)


def run_row(model: str, scheme: str, seed: int, rec: dict[str, Any]) -> dict[str, Any]:
    """One cached run: accuracy, blacklisting, execution and cost figures."""
    s, cfg = rec["summary"], rec["config"]
    unit = round_units(
        cfg["strategy"],
        cfg["num-partitions"],
        s.get("num_groups") or 1,
        cfg["fraction"],
        cfg.get("buffer-size", 10),
    )
    rounds = (s.get("global_updates") or 0) / unit
    seconds = rec.get("run_seconds")
    return dict(
        model=model,
        scheme=scheme,
        seed=seed,
        **{k: s.get(k) for k in FIG15_METRICS},
        stopped=s.get("stopped"),
        rounds=rounds,
        num_blacklisted=s.get("policy_num_blacklisted"),
        precision=s.get("policy_blacklist_precision"),
        recall=s.get("policy_blacklist_recall"),
        run_seconds=seconds,
        wall_s_per_round=seconds / rounds if seconds and rounds else None,
        executor=cfg.get("executor", "serial"),
        compute_device=cfg.get("compute-device", "auto"),
        code_version=rec.get("code_version"),
        git_commit=(rec.get("git_commit") or "")[:7] or None,
        end_unix=rec.get("computed_at_unix"),
    )


def overlaps(rows: list[dict[str, Any]], others: Sequence[dict[str, Any]] = ()) -> list[int | None]:
    """Per row, how many runs of ``rows`` and ``others`` (default none; itself included) were
    computing at some instant of its run: the largest number of intervals
    [end_unix - run_seconds, end_unix] that hold one point of its own interval. None for a
    row without timing."""

    def span(r: dict[str, Any]) -> tuple[float, float] | None:
        if r.get("end_unix") is None or r.get("run_seconds") is None:
            return None
        return r["end_unix"] - r["run_seconds"], r["end_unix"]

    spans = [span(r) for r in [*rows, *others]]
    out: list[int | None] = []
    for mine in spans[: len(rows)]:
        if mine is None:
            out.append(None)
            continue
        # The maximum of an interval count is reached at some interval's start.
        starts = [mine[0]] + [s[0] for s in spans if s and mine[0] <= s[0] < mine[1]]
        out.append(max(sum(1 for s in spans if s and s[0] <= t < s[1]) for t in starts))
    return out


def missing_row(model: str, scheme: str, seed: int) -> dict[str, Any]:
    """A run that is not cached, with the command that computes it (on a GPU)."""
    return dict(
        model=model,
        scheme=scheme,
        seed=seed,
        command=(
            "python -m experiments.flr2sp.run_parallel --scale paper "
            f"--models {model} --seeds {seed} "
            f"--schemes {scheme} --executor batched --compute-device cuda"
        ),
    )


def conv_pairs(model: str, seed: int, recs: dict[str, dict]) -> list[dict[str, Any]]:
    """Table IV convergence rows of one seed: filter on and off, where both runs are cached."""
    out = []
    for flt, suffix in (("on", ""), ("off", "-nofilter")):
        bsp, fl = (recs.get(f"{s}{suffix}") for s in ("bsp", "fl-r2sp"))
        if bsp is not None and fl is not None:
            out.append(dict(model=model, filter=flt, seed=seed, **conv_row(bsp, fl)))
    return out


def scoring_spans(args) -> list[dict[str, Any]]:
    """End time and duration of the cached outlier-scoring runs (they may have shared the
    machine with the scheme runs)."""
    from experiments.flr2sp.outliers_scoring import MODES, run_of

    recs = [run_of(args, seed, mode, "cnn") for seed in args.seeds for mode in MODES]
    return [
        dict(end_unix=r.get("computed_at_unix"), run_seconds=r.get("run_seconds"))
        for r in recs
        if r is not None
    ]


def collect(args) -> tuple[list[dict], list[dict], list[dict], dict[str, dict[str, list]]]:
    """Cached runs, missing runs, convergence pairs and accuracy histories per model."""
    rows: list[dict] = []
    missing: list[dict] = []
    conv: list[dict] = []
    histories: dict[str, dict[str, list]] = {}
    for model in models(args, "training"):
        histories[model] = {}
        for seed in args.seeds:
            recs = {}
            for name in SCHEMES:
                rec = scheme_run(args, seed, model, name, cached_only=True)
                if rec is None:
                    missing.append(missing_row(model, name, seed))
                    continue
                recs[name] = rec
                rows.append(run_row(model, name, seed, rec))
                histories[model].setdefault(name, []).append(rec["history"])
            conv += conv_pairs(model, seed, recs)
    for row, n in zip(rows, overlaps(rows, scoring_spans(args)), strict=True):
        row["concurrent_runs"] = n
    return rows, missing, conv, histories


def main(argv=None) -> None:
    args = parse_args("paper_scale", __doc__, argv)
    # The paper's size whatever --scale says, and never a training run.
    args = dataclasses.replace(args, scale="paper", skip_training=True)
    rows, missing, conv, histories = collect(args)
    for model, per_scheme in histories.items():
        if per_scheme:
            plot(args, model, {k: per_scheme[k] for k in SCHEMES if k in per_scheme})
    table = aggregate(rows, ("model", "scheme"), METRICS)
    execution = sorted({(r["executor"], r["compute_device"]) for r in rows})
    finish(
        args,
        rows,
        table,
        {
            "filter_loss": filter_loss(table),
            "filter_pairs": aggregate(
                filter_pairs(rows), ("model", "scheme"), ("gain_points", "gain_relative")
            ),
            "convergence": aggregate(conv, ("model", "filter"), CONV_METRICS),
            "missing": missing,
            "execution": [dict(executor=e, compute_device=d) for e, d in execution],
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()

"""Cluster mode, small real runs on CPU: Figs. 8, 11 and 14 of the R²SP paper in miniature.

Real training through the cluster runtime (``fl_r2sp.cluster.runtime.local.run_local``: every
rank a process of this machine, gloo on loopback), so statistical efficiency (iterations to a
loss target) and overall efficiency (time to it) are measured, not modelled. Sizes are the
CPU's, not the paper's (the twin, ``python -m experiments.cluster_twin``, covers the paper's
sizes for hardware efficiency only); the setup and the verdict rule are in
:mod:`experiments.cluster_real_setup`.

* ``fig8``: BSP, ASP, SSP, R²SP on ``mlp-wide`` (4.9 MB of parameters, little compute: the
  network-bound regime of the paper's AlexNet/VGG16), 4 workers, 1 PS whose ingress and egress
  are each throttled to 20 MB/s; target loss 1.0; normalised by BSP.
* ``fig11``: R²SP without and with batch tuning (idle rule) on ResNet-32 / CIFAR-10 (first
  10,000 training images, batch 16), 4 workers with the compute multipliers of cluster B's
  speeds (g2.2x, p2.x, g3.4x, g3.4x: 2.14, 1.46, 1, 1), 1 PS unthrottled; target loss 2.2.
* ``fig14``: BSP, SAFA and R²SP + tuning on the small transformer (copy task), 4 workers with
  injected delays 0.5, 0.5, 1, 1 s per iteration, 1 PS unthrottled; target loss 2.1.

Learning rates: the same for every scheme of an item. BSP applies the mean of the N gradients
of an iteration, the other schemes each push at once, so per iteration they take N steps of
that size (more with tuning's linear scaling); the rates are the largest that kept every
scheme finite in trial runs (lr 0.1 made SAFA and R²SP + tuning diverge on the transformer).

    python -m experiments.cluster_real                       # all, 2 seeds, ~20 min on 2 cores
    python -m experiments.cluster_real --only fig14 --seeds 0
    python -m experiments.cluster_real --publish experiments/report/cluster_real

Runs are cached under ``<out>/cluster_real/_runs/`` by configuration, so a rerun only redoes
what changed (``--fresh`` reruns everything); each item writes ``runs.csv``, ``summary.csv``,
``summary.json`` and a figure to ``<out>/cluster_real/<item>/``; ``--publish`` copies them to
the folder that ``python -m experiments.report`` reads.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments.cluster_real_figs import plot_fig8, plot_fig11, plot_fig14
from experiments.cluster_real_setup import (
    FIG8_ITERATION_NORM,
    FIG8_TIME_NORM,
    FIG11_TIME_RATIO,
    FIG14_DELAYS,
    FIG14_TIME_RATIO,
    cached_run,
    mean,
    multipliers,
    publish,
    ratio,
    write_item,
)
from experiments.cluster_twin_setup import claim, verdict
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.schemes import scheme_params as SchemeParams

Records = dict[tuple[str, int], dict[str, Any]]
METRICS = ("iteration_s", "iterations_to_target", "samples_to_target", "time_to_target_s")


def _cfg(**kw: Any) -> ClusterConfig:
    """A run with the limits every real run here shares (no evaluation, no plots, quiet)."""
    limits: dict[str, Any] = {"timeout_s": 60.0, "run_timeout_s": 240.0}
    return ClusterConfig(eval_samples=0, progress_s=0.0, plots=False, **{**limits, **kw})


def fig8_config(scheme: str, seed: int) -> ClusterConfig:
    """Fig. 8's run of ``scheme``: mlp-wide, 4 workers, 1 PS throttled to 20 MB/s."""
    return _cfg(
        workers=4, servers=1, scheme=SchemeParams(scheme), model="mlp-wide", dataset="synthetic",
        batch_size=32, lr=0.01, max_iterations=40, loss_threshold=1.0,
        server_bandwidth_mb_s=20.0, seed=seed,
    )  # fmt: skip


def fig11_config(tuning: str, seed: int) -> ClusterConfig:
    """Fig. 11's R²SP run with ``tuning``: ResNet-32 / CIFAR-10 on cluster-B multipliers."""
    return _cfg(
        workers=4, servers=1, scheme=SchemeParams("r2sp", tuning=tuning), model="resnet32",
        dataset="cifar10", max_train=10_000, batch_size=16, lr=0.05, max_iterations=40,
        loss_threshold=2.2, compute_multipliers=multipliers(("g2.2x", "p2.x", "g3.4x", "g3.4x")),
        seed=seed, timeout_s=240.0, run_timeout_s=360.0,  # loading CIFAR-10 takes a while
    )  # fmt: skip


def fig14_config(label: str, seed: int) -> ClusterConfig:
    """Fig. 14's run ``label`` (bsp, safa, r2sp+tuning): transformer, injected delays."""
    params = SchemeParams("r2sp", tuning="idle") if label == "r2sp+tuning" else SchemeParams(label)
    return _cfg(
        workers=len(FIG14_DELAYS), servers=1, scheme=params, model="transformer",
        dataset="copy", batch_size=32, lr=0.04, max_iterations=50, loss_threshold=2.1,
        iteration_delays=FIG14_DELAYS, seed=seed,
    )  # fmt: skip


def _collect(out: Path, item: str, labels: Sequence[str], seeds: Sequence[int],
             make: Callable[[str, int], ClusterConfig], fresh: bool) -> Records:  # fmt: skip
    recs: Records = {}
    for seed in seeds:  # seed-major: a cut-short run still has whole seeds
        for lab in labels:
            recs[(lab, seed)] = cached_run(out, f"{item}-{lab}-s{seed}", make(lab, seed), fresh)
    return recs


def _run_rows(recs: Records) -> list[dict[str, Any]]:
    return [
        {"label": lab, "seed": seed, **{m: r[m] for m in METRICS}, "pushes": r["pushes"],
         "mean_batch": r["mean_batch"], "final_mean_loss": r["final_mean_loss"],
         "status": r["summary"]["status"], "wall_s": r["wall_s"]}
        for (lab, seed), r in sorted(recs.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]  # fmt: skip


def _paired(recs: Records, lab: str, base: str, metric: str, seeds: Sequence[int]) -> float | None:
    """Mean over seeds of ``metric(lab) / metric(base)`` (seeds where both are known)."""
    return mean([ratio(recs[(lab, s)][metric], recs[(base, s)][metric]) for s in seeds])


def _means(recs: Records, lab: str, seeds: Sequence[int]) -> dict[str, Any]:
    row: dict[str, Any] = {m: mean([recs[(lab, s)][m] for s in seeds]) for m in METRICS}
    row["reached"] = f"{sum(recs[(lab, s)]['time_to_target_s'] is not None for s in seeds)}" \
                     f"/{len(seeds)}"  # fmt: skip
    row["final_loss"] = mean([recs[(lab, s)]["final_mean_loss"] for s in seeds])
    return row


def _v(ours: float | None, paper: float, baseline: float) -> str:
    return verdict(float("nan") if ours is None else ours, paper, baseline)


def fig8(out: Path, seeds: Sequence[int], fresh: bool) -> dict[str, Any]:
    """Hardware, statistical and overall efficiency of four schemes normalised by BSP."""
    schemes = ("bsp", "asp", "ssp", "r2sp")
    recs = _collect(out, "fig8", schemes, seeds, fig8_config, fresh)
    table = []
    for s in schemes:
        row = {"scheme": s, **_means(recs, s, seeds)}
        for metric, name in (("iteration_s", "hardware_norm"), ("iterations_to_target",
                             "statistical_norm"), ("samples_to_target", "samples_norm"),
                             ("time_to_target_s", "overall_norm")):  # fmt: skip
            row[name] = _paired(recs, s, "bsp", metric, seeds)
        table.append(row)
    by = {r["scheme"]: r for r in table}
    r2 = by["r2sp"]
    r2.update(paper_hardware_norm=FIG8_ITERATION_NORM,
              verdict_hardware=_v(r2["hardware_norm"], FIG8_ITERATION_NORM, 1.0),
              paper_overall_norm=FIG8_TIME_NORM,
              verdict_overall=_v(r2["overall_norm"], FIG8_TIME_NORM, 1.0))  # fmt: skip
    it = {s: by[s]["iterations_to_target"] for s in schemes}
    known = all(v is not None for v in it.values())
    claims = {
        "R²SP iterates fastest": claim(
            min(schemes, key=lambda s: by[s]["iteration_s"]) == "r2sp"),
        "R²SP needs more iterations than BSP": "n/a" if not known
        else claim(it["r2sp"] > it["bsp"]),
        "R²SP needs fewer iterations than ASP and SSP": "n/a" if not known
        else claim(it["r2sp"] < min(it["asp"], it["ssp"])),
    }  # fmt: skip
    plot_fig8(out / "fig8" / "fig8.png", table, recs, seeds)
    return _write(out, "fig8", recs, table, seeds, claims)


def fig11(out: Path, seeds: Sequence[int], fresh: bool) -> dict[str, Any]:
    """R²SP with and without batch tuning on heterogeneous workers: time to the target."""
    recs = _collect(out, "fig11", ("none", "idle"), seeds, fig11_config, fresh)
    table = []
    for lab in ("none", "idle"):
        row = {"tuning": lab, **_means(recs, lab, seeds)}
        row["time_ratio"] = _paired(recs, lab, "none", "time_to_target_s", seeds)
        row["iterations_ratio"] = _paired(recs, lab, "none", "iterations_to_target", seeds)
        row["mean_batch"] = mean([recs[(lab, s)]["mean_batch"] for s in seeds])
        table.append(row)
    tuned = table[1]
    tuned.update(paper_time_ratio=FIG11_TIME_RATIO,
                 verdict_time=_v(tuned["time_ratio"], FIG11_TIME_RATIO, 1.0))  # fmt: skip
    plot_fig11(out / "fig11" / "fig11.png", recs, seeds)
    return _write(out, "fig11", recs, table, seeds, {"tuning reaches the target sooner": _sooner(
        [(recs[("idle", s)]["time_to_target_s"], recs[("none", s)]["time_to_target_s"])
         for s in seeds])})  # fmt: skip


def _sooner(pairs: Sequence[tuple[float | None, float | None]]) -> str:
    """Claim verdict over seeds: (tuned, untuned) times to the target, None = not reached.

    A seed counts for tuning if only the tuned run reached the target or both did and the tuned
    one sooner; against it if only the untuned run reached it or both did and it was sooner;
    "holds" needs a majority of the seeds where either run reached the target.
    """
    votes = [
        (a is not None) and (b is None or a < b) for a, b in pairs if a is not None or b is not None
    ]
    return "n/a" if not votes else claim(2 * sum(votes) > len(votes))


def fig14(out: Path, seeds: Sequence[int], fresh: bool) -> dict[str, Any]:
    """BSP, SAFA and R²SP + tuning with injected delays: iteration time, iterations, time."""
    labels = ("bsp", "safa", "r2sp+tuning")
    recs = _collect(out, "fig14", labels, seeds, fig14_config, fresh)
    table = [{"scheme": lab, **_means(recs, lab, seeds),
              "iteration_norm": _paired(recs, lab, "bsp", "iteration_s", seeds),
              "statistical_norm": _paired(recs, lab, "bsp", "iterations_to_target", seeds),
              "overall_norm": _paired(recs, lab, "bsp", "time_to_target_s", seeds),
              "discarded": mean([float(sum(len(d) for d in recs[(lab, s)]["summary"].get(
                  "discarded_updates", [[]])[:1])) for s in seeds])}
             for lab in labels]  # fmt: skip
    by = {r["scheme"]: r for r in table}
    r2 = by["r2sp+tuning"]
    others = [lab for lab in labels[:2] if by[lab]["time_to_target_s"] is not None]
    second = min(others, key=lambda lab: by[lab]["time_to_target_s"]) if others else None
    vs_second = None if second is None else mean(
        [ratio(recs[("r2sp+tuning", s)]["time_to_target_s"], recs[(second, s)]["time_to_target_s"])
         for s in seeds])  # fmt: skip
    r2.update(second_best=second, time_vs_second=vs_second, paper_time_vs_second=FIG14_TIME_RATIO,
              verdict_time=_v(vs_second, FIG14_TIME_RATIO, 1.0))  # fmt: skip
    it = {lab: by[lab]["iterations_to_target"] for lab in labels}
    claims = {
        "R²SP + tuning has the best per-iteration time": claim(
            min(labels, key=lambda lab: by[lab]["iteration_s"]) == "r2sp+tuning"),
        "R²SP + tuning needs more iterations than BSP and SAFA": "n/a"
        if None in it.values() else claim(it["r2sp+tuning"] > max(it["bsp"], it["safa"])),
    }  # fmt: skip
    plot_fig14(out / "fig14" / "fig14.png", table, recs, seeds)
    return _write(out, "fig14", recs, table, seeds, claims)


def _write(out: Path, item: str, recs: Records, table: list[dict[str, Any]],
           seeds: Sequence[int], claims: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    print(f"== {item} (real runs on CPU, seeds {list(seeds)})", flush=True)
    return write_item(out / item, item, recs, _run_rows(recs), table, seeds, claims)


ITEMS: dict[str, Callable[[Path, Sequence[int], bool], dict[str, Any]]] = {
    "fig8": fig8, "fig11": fig11, "fig14": fig14,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.cluster_real",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", default="", help=f"comma-separated subset of {list(ITEMS)}")
    parser.add_argument("--seeds", default="0,1", help="comma-separated seeds [0,1]")
    parser.add_argument("--out", default="experiments/results", help="results root")
    parser.add_argument("--publish", default="", help="also copy the item files here")
    parser.add_argument("--fresh", action="store_true", help="rerun cached runs")
    ns = parser.parse_args(argv)
    only = [x.strip() for x in ns.only.split(",") if x.strip()] or list(ITEMS)
    if unknown := sorted(set(only) - set(ITEMS)):
        parser.error(f"unknown items {unknown}; choose from {list(ITEMS)}")
    seeds = [int(s) for s in ns.seeds.split(",") if s.strip()]
    out = Path(ns.out) / "cluster_real"
    for item in only:
        ITEMS[item](out, seeds, ns.fresh)
    if ns.publish:
        publish(out, Path(ns.publish), only)


if __name__ == "__main__":
    main()

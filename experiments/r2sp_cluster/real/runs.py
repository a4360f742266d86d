"""Shared setup of the real cluster runs: the paper's numbers, cached runs, and run analysis.

These are **small real runs on CPU** (gloo on loopback, every rank a process of this machine,
one torch thread each), not the paper's cluster: 4-6 workers and 1 PS, small batches, a few
dozen iterations, loss targets reachable in about two minutes per run. The virtual-time twin
(:mod:`experiments.r2sp_cluster.twin.run`) gives hardware efficiency at the paper's size; only
these runs train a model, so statistical and overall efficiency come from here.

Measures of one run (computed from its ``workers.csv``, :func:`analyse`):

* **iteration_s**: mean span of an iteration (permission wait + pull + compute + push) over the
  rows with iteration >= 1 (iteration 0 carries every worker's first contact);
* **iterations to target**: the runtime's convergence rule replayed on the rows in order of
  their push times (:class:`~fl_r2sp.cluster.runtime.common.convergence.ConvergenceTracker`: the
  mean of the live workers' latest batch losses below the target for 10 iterations' worth of
  pushes); the pushes up to that point divided by N, and the samples they used;
* **time to target**: the push time of that point, from the first iteration's start;
* **blocking_s / active_s**: mean permission wait and mean pull + compute + push of the rows
  with iteration >= 1; **staleness**: how many pushes had each staleness (updates other workers
  applied between the pull and the push); **overrun_share**: under the emulated compute model,
  the share of iterations whose real pass outlasted the emulated device's time (those took the
  real time, so the machine's load reached them); **sample_cost_s**: the run's base per-sample
  cost shared by its workers (``auto``: measured by the first run of a seed and pinned for the
  seed's other runs, :func:`collect`).

A run that never meets the rule within its iteration cap has no iterations/time to target
(shown as n/a). Verdict rule: the report's (:func:`experiments.r2sp_cluster.twin.setting.judge`);
a time normalised by its baseline (BSP, no tuning, the second-best scheme) is read as the
reduction one minus it: "reproduced" with the paper's sign and ours/paper's in [2/3, 3/2],
"same direction" with the sign outside the band, else "not reproduced"; claims without numbers
are "holds" / "does not hold".

Provenance: a run's record holds the git commit of the checkout, whether the code it runs
(:data:`CODE_PATHS`) had uncommitted edits, and the code version of ``fl_r2sp`` (cluster mode
included; part of the cache key, so a run of other code is never reused); each item writes
them, run by run, to ``provenance.json`` beside its summary, which the report reads.

The machine is a shared 2-core VM that other jobs load heavily: every time here is the wall
time of CPU-contended processes and varies from run to run by tens of percent.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from experiments.common import provenance
from experiments.common.run_cache import write_csv, write_json
from experiments.r2sp_cluster.twin.setting import judge
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.common.convergence import ConvergenceTracker
from fl_r2sp.cluster.runtime.ps.compute_model import emulation_summary
from fl_r2sp.cluster.telemetry import read_rows

#: Paper (cluster figures; docs/paper-notes.md §3.5): R²SP's iteration is ~30% shorter than
#: BSP's (AlexNet, VGG16) and its time to converge up to 25% shorter (VGG16).
FIG8_ITERATION_NORM = 0.70
FIG8_TIME_NORM = 0.75
#: Fig. 11: batch tuning speeds convergence by ~40% (ResNet32): time ratio tuned / untuned.
FIG11_TIME_RATIO = 0.60
#: Fig. 14: R²SP + tuning improves on the second-best scheme end to end by 16.9% (T5-Small).
FIG14_TIME_RATIO = 1 - 0.169
#: Cluster B speeds (Table III, samples/s): g2.2xlarge, p2.xlarge, g3.4xlarge.
SPEEDS = {"g2.2x": 429.0, "p2.x": 628.0, "g3.4x": 917.0}
#: Fig. 14's injected per-iteration delays (s): 0.5 s on 2 workers, 1 s on 2 others (the paper
#: has 4 more workers without delay; 4 workers keep the CPU runs short).
FIG14_DELAYS = (0.5, 0.5, 1.0, 1.0)
#: Bump when the cached record's layout or the analysis changes.
RECORD_SCHEMA = 2
#: The code a real run executes (checkout-relative): uncommitted edits here make a run dirty.
CODE_PATHS = ("fl_r2sp", "experiments/common", "experiments/r2sp_cluster")


def cluster_code() -> str:
    """Code version of the whole engine, cluster mode included."""
    return provenance.code_version(skip=())


def multipliers(types: Sequence[str]) -> tuple[float, ...]:
    """Compute multipliers of workers of the given cluster-B types, fastest = 1."""
    fastest = max(SPEEDS[t] for t in types)
    return tuple(round(fastest / SPEEDS[t], 4) for t in types)


def run_key(cfg: ClusterConfig, code: str | None = None) -> str:
    """12-hex key of a run's configuration (its run folder excluded) and the code running it
    (``code``, default: :func:`cluster_code`)."""
    d = cfg.to_dict()
    d.pop("run_dir", None)
    blob = json.dumps(
        {"schema": RECORD_SCHEMA, "code": code or cluster_code(), "cfg": d},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def cached_run(out: Path, label: str, cfg: ClusterConfig, fresh: bool = False) -> dict[str, Any]:
    """Run ``cfg`` (or load its cached record) and return the analysed record.

    The record (``<out>/_runs/<label>-<key>.json``) holds the configuration, the runtime's
    summary and :func:`analyse`'s measures; the run folder is kept under ``<out>/_rundirs``.
    """
    from fl_r2sp.cluster.local import run_local

    path = out / "_runs" / f"{label}-{run_key(cfg)}.json"
    # The current code under any of its names (a pure move of files keeps the code).
    for code in provenance.current_versions(skip=()):
        done = out / "_runs" / f"{label}-{run_key(cfg, code)}.json"
        if done.exists() and not fresh:
            return dict(json.loads(done.read_text()))
    run_parent = out / "_rundirs" / label
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(f"-- running {label} ({cfg.scheme.scheme}, {cfg.model}, seed {cfg.seed})", flush=True)
    run = run_local(replace(cfg, run_dir=str(run_parent)))
    summary = run.summary
    if summary is None:
        raise RuntimeError(f"{label}: rank 0 did not finish (exit codes {run.exitcodes})")
    rows = read_rows(Path(summary["run_dir"]) / "workers.csv")
    commit, dirty = provenance.git_state(CODE_PATHS)
    record = {
        "label": label, "config": cfg.to_dict(), "summary": summary, "wall_s": run.wall_s,
        "code_version": cluster_code(), "git_commit": commit, "git_dirty": dirty,
        "computed_at": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "load_avg": os.getloadavg()[0],
        **analyse(rows, cfg.workers, cfg.loss_threshold, cfg.convergence_window),
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, default=_plain))
    tmp.replace(path)
    print(f"   {label}: status {summary['status']}, iteration {record['iteration_s']:.3f} s, "
          f"to target {record['iterations_to_target']} it / {record['time_to_target_s']} s, "
          f"wall {run.wall_s:.0f} s", flush=True)  # fmt: skip
    return record


def analyse(
    rows: Sequence[Mapping[str, str]], workers: int, target: float, window: int
) -> dict[str, Any]:
    """Mean iteration span, the convergence point by the runtime's rule, and the loss curve."""
    done = sorted(rows, key=lambda r: float(r["t_end"]))
    if not done:
        raise ValueError("the run has no worker rows")
    t0 = min(float(r["t_start"]) for r in done)
    spans = [float(r["t_end"]) - float(r["t_start"]) for r in done if int(r["iteration"]) >= 1]
    tracker = ConvergenceTracker(target, window)
    hit: int | None = None
    curve: list[tuple[float, float, float]] = []  # (time, iterations per worker, mean loss)
    for i, r in enumerate(done):
        met = tracker.add(int(r["worker"]), float(r["loss"]), workers)
        curve.append((float(r["t_end"]) - t0, (i + 1) / workers, tracker.mean_loss()))
        if met and hit is None:
            hit = i
    samples = [int(r["batch_size"]) for r in done]
    steady = [r for r in done if int(r["iteration"]) >= 1]
    return {
        "iteration_s": sum(spans) / len(spans) if spans else math.nan,
        **_split(steady),
        "iterations_to_target": None if hit is None else (hit + 1) / workers,
        "samples_to_target": None if hit is None else sum(samples[: hit + 1]),
        "time_to_target_s": None if hit is None else float(done[hit]["t_end"]) - t0,
        "pushes": len(done),
        "final_mean_loss": tracker.mean_loss(),
        "curve": curve[:: max(1, len(curve) // 200)],
        "mean_batch": sum(samples) / len(samples),
    }


def _split(rows: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """Blocking against active time, the staleness counts and the overrun share of ``rows``."""
    n = max(1, len(rows))
    stale: dict[str, int] = {}
    for r in rows:
        if r.get("staleness") not in (None, ""):
            k = str(int(float(r["staleness"])))
            stale[k] = stale.get(k, 0) + 1
    return {
        "blocking_s": sum(float(r["blocking_s"]) for r in rows) / n,
        "active_s": sum(float(r[k]) for r in rows for k in ("pull_s", "compute_s", "push_s")) / n,
        "staleness": dict(sorted(stale.items(), key=lambda kv: int(kv[0]))),
        **emulation_summary(rows),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"not JSON-able: {type(value).__name__}")


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` or None when either is missing or ``b`` is 0."""
    return None if a is None or b is None or b == 0 else a / b


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the known values (None if none is known)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return sum(xs) / len(xs) if xs else None


def write_item(
    d: Path,
    item: str,
    recs: Mapping[Any, Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    table: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    claims: Mapping[str, str],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write an item's ``runs.csv``, ``summary.csv``, ``claims.csv``, ``provenance.json``
    (:func:`provenance_of`) and ``summary.json`` to ``d``, print its table rows and claims, and
    return the summary.

    The summary holds ``item``, ``seeds``, ``table``, ``claims``, then ``extra``'s entries
    (default None: none), then ``config``: the first run's configuration without its scheme
    and run folder (every run of an item shares the rest).
    """
    write_csv(d / "runs.csv", runs)
    write_csv(d / "summary.csv", table)
    write_csv(d / "claims.csv", [{"claim": k, "verdict": v} for k, v in claims.items()])
    write_json(d / "provenance.json", provenance_of(recs))
    any_cfg = next(iter(recs.values()))["config"]
    summary = {
        "item": item,
        "seeds": list(seeds),
        "table": table,
        "claims": claims,
        **(extra or {}),
        "config": {k: v for k, v in any_cfg.items() if k not in ("scheme", "run_dir")},
    }
    write_json(d / "summary.json", summary)
    for row in table:
        print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in row.items()), flush=True)  # fmt: skip
    for k, v in claims.items():
        print(f"  claim: {k}: {v}", flush=True)
    return summary


def provenance_of(recs: Mapping[Any, Mapping[str, Any]]) -> dict[str, Any]:
    """An item's provenance in the layout the report reads (``uncommitted`` and ``summarise``
    of :mod:`experiments.common.provenance`): the current code version and, run by run, its
    label, seed, code version, git commit, whether that code had uncommitted edits, when it ran,
    how long it took and the load then (records cached before provenance was kept have no
    commit: they count as uncommitted)."""
    keep = ("code_version", "git_commit", "git_dirty", "computed_at", "wall_s", "load_avg")
    runs = [
        {"label": rec["label"], "seed": rec["config"]["seed"],
         **{k: rec.get(k, provenance.UNVERSIONED if k == "code_version" else None) for k in keep}}
        for rec in sorted(recs.values(), key=lambda r: str(r["label"]))
    ]  # fmt: skip
    return {"code_version": cluster_code(), "schema": RECORD_SCHEMA, "runs": runs}


def publish(out: Path, dest: Path, items: Sequence[str]) -> None:
    """Copy every item's ``summary.csv``, ``runs.csv`` and figures from ``out`` to ``dest``."""
    for item in items:
        (dest / item).mkdir(parents=True, exist_ok=True)
        for src in sorted((out / item).iterdir()):
            if src.suffix in (".csv", ".png", ".json"):
                shutil.copy(src, dest / item / src.name)
    print(f"published {', '.join(items)} to {dest}", flush=True)


Records = dict[tuple[str, int], dict[str, Any]]


METRICS = ("iteration_s", "iterations_to_target", "samples_to_target", "time_to_target_s",
           "blocking_s", "active_s")  # fmt: skip


def config(**kw: Any) -> ClusterConfig:
    """A run with the limits every real run here shares (no evaluation, no plots, quiet)."""
    limits: dict[str, Any] = {"timeout_s": 60.0, "run_timeout_s": 240.0}
    return ClusterConfig(eval_samples=0, progress_s=0.0, plots=False, **{**limits, **kw})


def collect(out: Path, item: str, labels: Sequence[str], seeds: Sequence[int],
             make: Callable[[str, int], ClusterConfig], fresh: bool) -> Records:  # fmt: skip
    """Run (or load) every (label, seed) of an item, seed by seed, labels in order.

    Under the emulated compute model with ``auto`` cost, the arms of one seed run on the SAME
    emulated devices: the first label's run measures the base per-sample cost, and every other
    label of that seed runs with it pinned (:func:`shared_cost`). Measured per run instead, the
    arms of a seed drew 20-46 ms per sample on this shared machine, so a ratio between arms
    mostly compared the machine's load at the two calibrations.
    """
    recs: Records = {}
    for seed in seeds:  # seed-major: a cut-short run still has whole seeds
        cost: float | None = None
        for lab in labels:
            cfg = shared_cost(make(lab, seed), cost)
            recs[(lab, seed)] = cached_run(out, f"{item}-{lab}-s{seed}", cfg, fresh)
            cost = cost if cost is not None else recs[(lab, seed)].get("sample_cost_s")
    return recs


def shared_cost(cfg: ClusterConfig, cost: float | None) -> ClusterConfig:
    """``cfg`` with its emulated devices' base per-sample cost pinned to ``cost``.

    Unchanged when ``cost`` is None (the seed's first run: it measures it), when the run does
    not emulate compute, or when its cost is pinned already.
    """
    if cost is None or cfg.compute_model != "emulated" or cfg.sample_cost_s is not None:
        return cfg
    return replace(cfg, sample_cost_s=float(cost))


def run_rows(recs: Records) -> list[dict[str, Any]]:
    return [
        {"label": lab, "seed": seed, **{m: r[m] for m in METRICS}, "pushes": r["pushes"],
         "mean_batch": r["mean_batch"], "final_mean_loss": r["final_mean_loss"],
         "staleness": staleness_text(r["staleness"]), "overrun_share": r["overrun_share"],
         "sample_cost_s": r.get("sample_cost_s"), "status": r["summary"]["status"],
         "wall_s": r["wall_s"], "load_avg": r["load_avg"]}
        for (lab, seed), r in sorted(recs.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]  # fmt: skip


def paired(recs: Records, lab: str, base: str, metric: str, seeds: Sequence[int]) -> float | None:
    """Mean over seeds of ``metric(lab) / metric(base)`` (seeds where both are known)."""
    return mean([ratio(recs[(lab, s)][metric], recs[(base, s)][metric]) for s in seeds])


def means(recs: Records, lab: str, seeds: Sequence[int]) -> dict[str, Any]:
    row: dict[str, Any] = {m: mean([recs[(lab, s)][m] for s in seeds]) for m in METRICS}
    row["reached"] = f"{sum(recs[(lab, s)]['time_to_target_s'] is not None for s in seeds)}" \
                     f"/{len(seeds)}"  # fmt: skip
    row["final_loss"] = mean([recs[(lab, s)]["final_mean_loss"] for s in seeds])
    row["overrun_share"] = mean([recs[(lab, s)]["overrun_share"] for s in seeds])
    row["sample_cost_s"] = mean([recs[(lab, s)].get("sample_cost_s") for s in seeds])
    row["staleness"] = staleness_text(pooled_staleness(recs, lab, seeds))
    return row


def staleness_text(counts: Mapping[str, int]) -> str:
    """Staleness counts as ``"0:3 1:10 2:80"`` (staleness:pushes, ascending)."""
    return " ".join(f"{k}:{v}" for k, v in sorted(counts.items(), key=lambda kv: int(kv[0])))


def pooled_staleness(recs: Records, lab: str, seeds: Sequence[int]) -> dict[str, int]:
    """The staleness counts of ``lab``'s runs over ``seeds``, added up."""
    total: dict[str, int] = {}
    for s in seeds:
        for k, v in recs[(lab, s)]["staleness"].items():
            total[k] = total.get(k, 0) + v
    return total


def norm_verdict(ours: float | None, paper: float, seeds: Sequence[int]) -> str:
    """Verdict of a time normalised by its baseline against the paper's (read as reductions)."""
    return judge(ours, paper, "norm", len(seeds))


def write_records(out: Path, item: str, recs: Records, table: list[dict[str, Any]],
           seeds: Sequence[int], claims: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    print(f"== {item} (real runs on CPU, seeds {list(seeds)})", flush=True)
    t_seeds = {r["config"]["scheme"].get("t_seed") for r in recs.values()} - {None}
    extra = {"t_seed": "/".join(sorted(t_seeds))} if t_seeds else None
    return write_item(out / item, item, recs, run_rows(recs), table, seeds, claims, extra)

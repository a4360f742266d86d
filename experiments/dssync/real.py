"""Real CPU runs of DS-Sync and its baselines in the emulated bottleneck scenarios S1-S3.

Eight worker processes on this machine (gloo) in two racks, ``mlp-wide`` (1.23 M parameters,
4.9 MB in fp32: the network dominates) on the synthetic set, every scheme on the DS-Sync
runtime (:mod:`fl_r2sp.cluster.runtime.dssync.rank`) with the same seeds, data streams and
iteration count. Links (:func:`~fl_r2sp.cluster.runtime.dssync.config.scenario`): every NIC
and rack uplink nominally ``--link-rate`` MB/s; a link shared with the background job gets half
(S1: both uplinks and worker 4's NIC, racks 5 + 3; S2: both uplinks, racks 4 + 4; S3: nothing,
4 + 4). Schemes: all-reduce BSP (AR), hierarchical AR, gossip (exponential graph), DS-Sync
(regroup every ``--period`` iterations), and in S1 DS-Sync with its static pattern.

Per run, from the run directory (computed, nothing typed in):

* ``comm_ms``: mean synchronisation time of a worker iteration (the paper's "comm. time":
  from the first call to all transfers done, waiting for group members included);
* ``comm_first_ms`` / ``comm_rest_ms``: the same over the first regroup period (DS-Sync's
  static pattern) and over the rest (after its first regroup);
* ``iter_s``: wall time per iteration (elapsed / iterations);
* ``it_target`` / ``t_target_s``: the first iteration (and the mean wall time the workers
  finished it) at which the 10-iteration trailing mean of the workers' mean training loss is
  <= the target; the target of a scenario is AR BSP's own trailing mean after ``--target-at``
  (0.75) of its iterations (the paper's target is "the lowest [accuracy] of BSP"; ours was
  first AR's loss at its last iteration, but with seed 0 every scheme ended within 0.002 of it
  and most missed it by 0.001, which measured nothing); None: never reached;
* ``ema_acc`` / ``avg_acc``: test accuracy (2,000 examples) of the world average of the EMA
  copies (the run's model) and of the plain models;
* ``found``: DS-Sync's last regroup decision (slow racks, delayed workers).

Outputs under ``--out`` (default ``records/report/dssync_real``): ``results.csv``,
``results.json`` and ``REPORT.md`` (our rows beside the paper's CIFAR-10 rows of Tables III-V,
speed-ups and the twin's verdict rule). Cost: 24-27 minutes per seed on the loaded 2-core
machine (13 runs).

Usage::

    python -m experiments.dssync.real
    python -m experiments.dssync.real --iterations 60 --scenarios S1 --out out/ds
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from experiments.dssync.twin import METHODS, PAPER, twin_times, verdict
from experiments.dssync.twin import scenario as twin_scenario
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.policies.dssync.regroup import DSSyncParams
from fl_r2sp.cluster.runtime.dssync.config import DSSyncRunConfig, scenario

#: Our scheme names -> the paper's method names (METHODS); "dssync-static": ablation.
SCHEMES = {"allreduce": "AR", "hierarchical": "Hier. AR", "gossip": "Gossip", "dssync": "DS-Sync"}
WINDOW = 10
MODEL = "mlp-wide"
FIELDS = ("seed", "scenario", "scheme", "status", "comm_ms", "comm_first_ms", "comm_rest_ms",
          "iter_s", "elapsed_s", "it_target",
          "t_target_s", "target_loss", "final_loss", "ema_acc", "avg_acc", "failed_syncs",
          "found")  # fmt: skip


def config(scheme: str, sc_name: str, ns: argparse.Namespace, run_dir: str) -> DSSyncRunConfig:
    """The run of ``scheme`` in scenario ``sc_name`` with the flags' knobs."""
    sc = scenario(sc_name, ns.workers, ns.link_rate)
    base = ClusterConfig(
        workers=ns.workers, servers=1, model=MODEL, dataset="synthetic", batch_size=32,
        lr=0.05, max_iterations=ns.iterations, timeout_s=60.0, run_timeout_s=1800.0,
        run_dir=run_dir, eval_samples=2000, progress_s=0.0, plots=False, seed=ns.seed,
    )  # fmt: skip
    params = DSSyncParams(period=ns.period, ema_factor=ns.ema_factor)
    return DSSyncRunConfig(
        base=base, scheme=scheme.removesuffix("-static"), racks=sc.racks, params=params,
        nic_mb_s=sc.nic_mb_s, uplink_mb_s=sc.uplink_mb_s, regroup=not scheme.endswith("-static"),
        boundary_timeout_s=300.0,
    )  # fmt: skip


def loss_curve(run_dir: Path) -> list[tuple[int, float, float]]:
    """Per iteration: (iteration, trailing mean of the workers' mean loss, mean finish time)."""
    with open(run_dir / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_it: dict[int, list[tuple[float, float]]] = {}
    for r in rows:
        by_it.setdefault(int(r["iteration"]), []).append((float(r["loss"]), float(r["t_end"])))
    means = []
    for k in sorted(by_it):
        v = by_it[k]
        means.append((k, math.fsum(x[0] for x in v) / len(v), math.fsum(x[1] for x in v) / len(v)))
    out = []
    for i, (k, _, t) in enumerate(means):
        window = [m for _, m, _ in means[max(0, i - WINDOW + 1) : i + 1]]
        out.append((k, math.fsum(window) / len(window), t))
    return out


def period_comm(run_dir: Path, period: int) -> tuple[float, float]:
    """Mean synchronisation time (ms) of the first regroup period and of the rest."""
    with open(run_dir / "workers.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["ok"] == "True"]
    first = [float(r["push_s"]) for r in rows if int(r["iteration"]) < period]
    rest = [float(r["push_s"]) for r in rows if int(r["iteration"]) >= period]
    mean = lambda v: 1e3 * math.fsum(v) / len(v) if v else math.nan  # noqa: E731
    return mean(first), mean(rest)


def row(sc_name: str, scheme: str, summary: dict[str, Any], target: float) -> dict[str, Any]:
    """One result row (module docstring)."""
    run_dir = Path(summary["run_dir"])
    curve = loss_curve(run_dir)
    period = int(json.loads((run_dir / "config.json").read_text())["params"]["period"])
    first, rest = period_comm(run_dir, period)
    hit = next(((k, t) for k, m, t in curve if m <= target), None)
    t0 = float(summary.get("t_started") or 0.0)
    last = summary.get("last_boundary") or {}
    found = f"slow racks {last.get('slow_racks')}, delayed {last.get('delayed')}"
    r3 = lambda v: None if v is None else round(float(v), 3)  # noqa: E731
    return {
        "scenario": sc_name, "scheme": scheme, "status": summary["status"],
        "comm_ms": r3(summary["comm_ms_mean"]), "comm_first_ms": r3(first),
        "comm_rest_ms": r3(rest),
        "iter_s": r3(summary["elapsed_s"] / max(1, curve[-1][0] + 1)),
        "elapsed_s": r3(summary["elapsed_s"]), "it_target": hit[0] if hit else None,
        "t_target_s": r3(hit[1] - t0) if hit else None, "target_loss": r3(target),
        "final_loss": r3(curve[-1][1]), "ema_acc": r3(summary.get("ema_test_accuracy")),
        "avg_acc": r3(summary.get("avg_test_accuracy")), "failed_syncs": summary["failed_syncs"],
        "found": found if scheme.startswith("dssync") else "",
    }  # fmt: skip


Run = tuple[str, str, dict[str, Any] | None]


def score(runs: list[Run], seed: int, target_at: float) -> list[dict[str, Any]]:
    """Rows of ``(scenario, scheme, summary)`` runs; each scenario's target is AR BSP's
    trailing-mean loss at the fraction ``target_at`` of its iterations."""
    targets = {}
    for sc, scheme, summary in runs:
        if scheme == "allreduce" and summary is not None:
            curve = loss_curve(Path(summary["run_dir"]))
            targets[sc] = curve[max(0, math.ceil(target_at * len(curve)) - 1)][1]
    rows = []
    for sc, scheme, summary in runs:
        if summary is None or sc not in targets:
            rows.append({"seed": seed, "scenario": sc, "scheme": scheme, "status": "no summary"})
        else:
            rows.append({"seed": seed, **row(sc, scheme, summary, targets[sc])})
    return rows


def run_all(ns: argparse.Namespace) -> list[Run]:
    """Run every (scenario, scheme) of the flags."""
    run_dir = ns.run_dir or tempfile.mkdtemp(prefix="dssync_real_")
    runs: list[Run] = []
    for sc_name in ns.scenarios.split(","):
        schemes = list(SCHEMES) + (["dssync-static"] if sc_name == "S1" else [])
        for scheme in schemes:
            summary = run_local(config(scheme, sc_name, ns, run_dir)).summary
            runs.append((sc_name, scheme, summary))
            comm = (summary or {}).get("comm_ms_mean")
            print(json.dumps({"scenario": sc_name, "scheme": scheme, "comm_ms": comm}), flush=True)
    return runs


def rescore(root: Path, ns: argparse.Namespace) -> list[Run]:
    """The runs already under ``root`` (one pass of this script), recognised by their config."""
    names = {}
    for sc in ns.scenarios.split(","):
        cfg = config("dssync", sc, ns, "")
        names[(cfg.racks, cfg.nic_mb_s, cfg.uplink_mb_s)] = sc
    runs: list[Run] = []
    for path in sorted(root.glob("*/summary.json"), key=lambda p: p.parent.name.rsplit("-", 2)[1:]):
        summary = json.loads(path.read_text())
        cfg = DSSyncRunConfig.from_dict(json.loads((path.parent / "config.json").read_text()))
        sc = names.get((cfg.racks, cfg.nic_mb_s, cfg.uplink_mb_s))
        if sc is not None and cfg.base.seed == ns.seed:
            scheme = cfg.scheme + ("-static" if not cfg.regroup else "")
            runs.append((sc, scheme, summary))
    return runs


def twin_ms(args: dict[str, Any]) -> dict[tuple[str, str], float]:
    """The flow-level twin's comm time (ms) per (scenario, method) at this run's scale: the
    twin's "one-path" scenarios (uplink = one NIC's rate, as here) with this model's bytes
    (key "static": DS-Sync's static pattern before regrouping),
    times scaled from its 20 Gb/s links to ``link_rate`` MB/s, per-flow latency set to 0 (it
    would scale too). The network alone: no CPU cost, no gloo latency."""
    from fl_r2sp.cluster.models import build_cluster_model, param_count
    from fl_r2sp.cluster.sim.dssync.engine import GBPS, dssync_time

    nbytes = 4.0 * param_count(build_cluster_model(MODEL))
    out = {}
    for sc in ("S1", "S2", "S3"):
        rn = dataclasses.replace(twin_scenario(sc, "one-path"), alpha_s=0.0)
        scale = rn.nic_gbps * GBPS / (float(args["link_rate"]) * 1e6)
        times, _ = twin_times(rn, nbytes)
        out.update({(sc, m): t * scale for m, t in zip(METHODS, times, strict=True)})
        out[(sc, "static")] = 1e3 * dssync_time(rn, nbytes).init_s * scale
    return out


def aggregate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (scenario, scheme) over the seeds, in first-seen order: means, ranges,
    per-seed lists, and the speed-up of AR's comm time over the scheme's (mean and per seed)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("comm_ms") is not None:
            groups.setdefault((r["scenario"], r["scheme"]), []).append(r)
    ar = {(r["scenario"], r.get("seed")): r["comm_ms"] for r in rows
          if r.get("scheme") == "allreduce" and r.get("comm_ms") is not None}  # fmt: skip
    out = []
    for (sc, scheme), rs in groups.items():
        mean = lambda key, rs=rs: math.fsum(float(r[key]) for r in rs) / len(rs)  # noqa: E731
        ar_mean = [ar[(sc, r.get("seed"))] for r in rs if (sc, r.get("seed")) in ar]
        per_seed = [ar[(sc, r.get("seed"))] / r["comm_ms"] for r in rs if (sc, r.get("seed")) in ar]
        out.append({
            "scenario": sc, "scheme": scheme, "seeds": len(rs), "comm_ms": mean("comm_ms"),
            "comm_lo": min(r["comm_ms"] for r in rs), "comm_hi": max(r["comm_ms"] for r in rs),
            "iter_s": mean("iter_s"), "it_target": [r["it_target"] for r in rs],
            "comm_first_ms": mean("comm_first_ms"), "comm_rest_ms": mean("comm_rest_ms"),
            "t_target_s": [r["t_target_s"] for r in rs], "final_loss": mean("final_loss"),
            "ema_acc": mean("ema_acc"), "avg_acc": mean("avg_acc"),
            "speedup": (math.fsum(ar_mean) / len(ar_mean)) / mean("comm_ms") if ar_mean else None,
            "speedup_seeds": per_seed, "found": "; ".join(sorted({r["found"] for r in rs})),
        })  # fmt: skip
    return out


def _list(values: list[Any]) -> str:
    return " / ".join("-" if v is None else f"{v:g}" for v in values)


def table_lines(rows: list[dict[str, Any]], args: dict[str, Any]) -> list[str]:
    """Our rows (over the seeds) beside the paper's CIFAR-10 rows: comm time, speed-up of AR
    over each scheme (ours: of the means, per-seed range; the paper's), the twin's verdict."""
    lines = [
        "| scenario | scheme | comm ms, mean (range) | first period / rest | twin ms, this scale "
        "| paper ms (CIFAR-10) | "
        "s/iter | "
        "iters to target, per seed | s to target, per seed | final loss | EMA acc | avg acc | "
        "AR/scheme comm (per seed) | paper | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    twin = twin_ms(args)
    for a in aggregate(rows):
        paper = PAPER[(a["scenario"], "Cifar10")]
        k = METHODS.index(SCHEMES[a["scheme"].removesuffix("-static")])
        su = a["speedup"]
        method = "static" if a["scheme"].endswith("-static") else METHODS[k]
        paper_su = paper[0] / paper[k]
        spread = ", ".join(f"{x:.2f}" for x in a["speedup_seeds"])
        cells = [a["scenario"], a["scheme"],
                 f"{a['comm_ms']:.1f} ({a['comm_lo']:.1f}-{a['comm_hi']:.1f})",
                 f"{a['comm_first_ms']:.1f} / {a['comm_rest_ms']:.1f}",
                 f"{twin[(a['scenario'], method)]:.1f}", f"{paper[k]:.1f}",
                 f"{a['iter_s']:.3f}", _list(a["it_target"]), _list(a["t_target_s"]),
                 f"{a['final_loss']:.3f}", f"{a['ema_acc']:.3f}", f"{a['avg_acc']:.3f}",
                 "n/a" if su is None else f"{su:.2f}x ({spread})", f"{paper_su:.2f}x"]  # fmt: skip
        ok = su is not None and a["scheme"] != "allreduce"
        cells.append(verdict(su, paper_su, True) if ok else "")
        lines.append("| " + " | ".join(cells) + " |")
    bad = [f"{r['scenario']} {r['scheme']} seed {r.get('seed')}: {r['status']}" for r in rows
           if r.get("comm_ms") is None]  # fmt: skip
    found = [f"{a['scenario']} {a['scheme']}: {a['found']}" for a in aggregate(rows) if a["found"]]
    lines += ["", "DS-Sync's last regroup decision: " + "; ".join(found) + "."]
    return lines + (["", "Runs without a summary: " + "; ".join(bad) + "."] if bad else [])


def scale_line(args: dict[str, Any]) -> str:
    """What ran, from the run's arguments (computed sizes)."""
    from fl_r2sp.cluster.models import build_cluster_model, param_count

    n = param_count(build_cluster_model(MODEL))
    seeds = ", ".join(str(x) for x in args.get("seeds", [args["seed"]]))
    return (f"{args['workers']} worker processes on one machine in two racks, {MODEL} "
            f"({n / 1e6:.2f} M parameters, {4 * n / 1e6:.1f} MB) on the synthetic set, "
            f"{args['iterations']} iterations, every link {args['link_rate']:g} MB/s nominal "
            f"(contended: half), DS-Sync regroup period {args['period']}, EMA factor "
            f"{args['ema_factor']}, seeds {seeds}")  # fmt: skip


def report(rows: list[dict[str, Any]], args: dict[str, Any]) -> str:
    """REPORT.md: scale, then :func:`table_lines`."""
    lines = [
        "# DS-Sync and baselines, real CPU runs in emulated S1-S3",
        "",
        f"Scale: {scale_line(args)}. Paper: 8 V100 workers, 20 Gb/s links, "
        "WideResNet-28-10 (36.5 M parameters) on CIFAR-10 (Tables III-V). Command: `python -m "
        "experiments.dssync.real` (module docstring: metrics, target).",
        "",
        *table_lines(rows, args),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--workers", type=int, default=8, help="workers [8]")
    parser.add_argument("--iterations", type=int, default=200, help="iterations [200]")
    parser.add_argument("--period", type=int, default=50, help="regroup period [50]")
    parser.add_argument("--link-rate", type=float, default=40.0, help="nominal MB/s [40]")
    parser.add_argument("--ema-factor", type=float, default=0.95, help="EMA factor [0.95]")
    parser.add_argument("--scenarios", default="S1,S2,S3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run-dir", default="")
    parser.add_argument("--out", default="records/report/dssync_real")
    parser.add_argument(
        "--target-at",
        type=float,
        default=0.75,
        help="AR's trailing loss at this fraction of its run is the target",
    )
    parser.add_argument(
        "--rescore", default="", help="score the runs already in this folder instead of running"
    )
    parser.add_argument("--append", action="store_true",
                        help="keep the other seeds' rows of <out>/results.json")  # fmt: skip
    ns = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = Path(ns.out)
    old: list[dict[str, Any]] = []
    if ns.append and (out / "results.json").exists():  # keep the other seeds' published rows
        old = [{"seed": 0, **r} for r in json.loads((out / "results.json").read_text())["rows"]]
    runs = rescore(Path(ns.rescore), ns) if ns.rescore else run_all(ns)
    rows = score(runs, ns.seed, ns.target_at)
    seeds = sorted({ns.seed, *(r.get("seed", 0) for r in old)})
    rows = sorted([r for r in old if r.get("seed", 0) != ns.seed] + rows, key=lambda r: r["seed"])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    where = ("run_dir", "rescore", "out", "append")  # this machine's paths stay out of the file
    args = {**{k: v for k, v in vars(ns).items() if k not in where}, "seeds": seeds}
    (out / "results.json").write_text(json.dumps({"args": args, "rows": rows}, indent=2))
    (out / "REPORT.md").write_text(report(rows, args))
    print(report(rows, args))


if __name__ == "__main__":
    main()

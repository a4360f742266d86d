"""Real CPU runs of the all-reduce family: all reduce vs partial reduce vs selective reduce.

Eight worker processes on this machine (gloo), ``mlp-wide`` (1.23 M parameters, 4.9 MB: the
network dominates) on the synthetic set, heterogeneous compute (a fixed delay per worker and
round) and heterogeneous links (token bucket per worker, caps round(M·u, 3) MB/s with
u ~ U[λ, 1], the selective-reduce paper's draw scaled down; the draw, the data streams and the
initial model follow the seed). Every scheme runs the same ticket budget (workers x rounds)
with each seed. Per run, from its run directory (computed, nothing typed in):

* ``sync_s``: mean sync time of a group (launch to the last member's report: delivery,
  group build, throttled reduce), the paper's "sync time";
* ``wait_s``: mean time a worker waited in the ready queue for its group;
* ``scale``: mean group size; ``syncs``; ``iterations`` (worker rounds reduced);
* ``wall_s``: training time (controller start to end); ``it_per_s``: iterations / wall_s;
* ``final_loss``: the run's final training loss;
* ``t_target_s``: first time the mean of the workers' latest training losses falls below
  ``--target`` (None: never).

Outputs under ``--out`` (default ``records/report/selective_real``): ``results.csv``,
``results.json`` (arguments, provenance, rows) and ``REPORT.md`` (per scheme the mean and range
over the seeds, ratios against partial and all reduce, the verdicts where the paper states a
claim: :mod:`experiments.selective.real_report`). The run folders stay where ``--run-dir``
says (default: a new temporary folder, printed), with ``provenance.json`` (the git commit and
whether the tree was clean); ``--rescore DIR`` rebuilds the record from them. Cost on the
loaded 2-core machine: about half a minute per run, 9 runs for three seeds.

Usage::

    python -m experiments.selective.real                      # seeds 0,1,2, 3 schemes
    python -m experiments.selective.real --rounds 10 --seeds 0 --out out/sel
    python -m experiments.selective.real --rescore DIR        # re-score kept run folders
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.common import eta
from experiments.common.provenance import code_version, git_state
from experiments.selective.real_report import report
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig

__all__ = ["DELAYS", "FIELDS", "SCHEMES", "config", "rescore", "row", "run_all", "time_to_target"]

SCHEMES = ("allreduce", "partial", "selective")
WORKERS = 8
#: Seconds of emulated compute per round, per worker (two stragglers).
DELAYS = (0.10, 0.12, 0.15, 0.10, 0.20, 0.12, 0.35, 0.50)
FIELDS = ("seed", "scheme", "status", "sync_s", "wait_s", "scale", "syncs", "iterations",
          "wall_s", "it_per_s", "final_loss", "t_target_s", "failed_syncs", "lost_workers",
          "parameters", "caps")  # fmt: skip
#: (scheme, seed, summary or None when the run left none).
Run = tuple[str, int, dict[str, Any] | None]


def config(scheme: str, seed: int, ns: argparse.Namespace, run_dir: str) -> ReduceRunConfig:
    """The run of ``scheme`` with ``seed`` and the flags' knobs (``rounds``, ``max_mb_s``,
    ``bw_lambda``, ``estimate``) under ``run_dir``."""
    base = ClusterConfig(
        workers=WORKERS, servers=1, model="mlp-wide", dataset="synthetic", batch_size=32,
        lr=0.02, max_iterations=ns.rounds, iteration_delays=DELAYS, timeout_s=60.0,
        run_timeout_s=600.0, run_dir=run_dir, eval_samples=0, progress_s=0.0, plots=False,
        seed=seed,
    )  # fmt: skip
    return ReduceRunConfig(
        base=base, reduce=ReduceParams(scheme), link_max_mb_s=ns.max_mb_s,
        bw_lambda=ns.bw_lambda, bw_estimate=ns.estimate,
    )  # fmt: skip


def time_to_target(run_dir: Path, target: float, workers: int = WORKERS) -> float | None:
    """First ready time (seconds after the run started) at which the mean of every worker's
    latest training loss is below ``target``; None if never.

    Parameters
    ----------
    run_dir : Path
        A run folder with ``workers.csv`` and ``summary.json``.
    target : float
        The loss target.
    workers : int, default 8
        Workers whose latest losses must all be known.
    """
    with open(run_dir / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    events = sorted((float(r["t_start"]) + float(r["compute_s"]), int(r["worker"]),
                     float(r["loss"])) for r in rows)  # fmt: skip
    start = json.loads((run_dir / "summary.json").read_text())
    latest: dict[int, float] = {}
    for t, w, loss in events:
        latest[w] = loss
        if len(latest) == workers and math.fsum(latest.values()) / workers < target:
            return t - float(start.get("t_started") or 0.0)
    return None


def row(scheme: str, seed: int, summary: dict[str, Any] | None, target: float) -> dict[str, Any]:
    """One result row (the module docstring's columns) of a run's ``summary``; a run without
    a summary gives a row with its status only."""
    if summary is None:
        return {"seed": seed, "scheme": scheme, "status": "no summary"}
    r3 = lambda v: None if v is None else round(float(v), 3)  # noqa: E731
    wall = float(summary["elapsed_s"])
    return {
        "seed": seed, "scheme": scheme, "status": summary["status"],
        "sync_s": r3(summary["sync_time_s"]), "wait_s": r3(summary["queue_wait_s"]),
        "scale": r3(summary["scale"]), "syncs": summary["total_syncs"],
        "iterations": summary["total_iterations"], "wall_s": r3(wall),
        "it_per_s": r3(summary["total_iterations"] / wall) if wall > 0 else None,
        "final_loss": r3(summary["final_loss"]),
        "t_target_s": r3(time_to_target(Path(summary["run_dir"]), target)),
        "failed_syncs": summary.get("failed_syncs"),
        "lost_workers": len(summary.get("lost_workers") or {}),
        "parameters": summary.get("parameters"),
        "caps": " ".join(f"{c:g}" for c in summary.get("link_caps_mb_s") or ()),
    }  # fmt: skip


def run_all(ns: argparse.Namespace, seeds: Sequence[int], run_dir: Path) -> list[Run]:
    """Run every scheme of ``--schemes`` with every seed under ``run_dir``, printing a
    progress line (with the time left) after each run."""
    schemes = ns.schemes.split(",")
    eta.plan(len(seeds) * len(schemes))
    runs: list[Run] = []
    for seed in seeds:
        for scheme in schemes:
            t0 = time.monotonic()
            summary = run_local(config(scheme, seed, ns, str(run_dir))).summary
            runs.append((scheme, seed, summary))
            r = row(scheme, seed, summary, ns.target)
            print(f"{eta.count(time.monotonic() - t0)} seed {seed} {scheme}: {r['status']}, "
                  f"sync {r.get('sync_s')} s, scale {r.get('scale')}, wall {r.get('wall_s')} s, "
                  f"to target {r.get('t_target_s')} s", flush=True)  # fmt: skip
    return runs


def rescore(root: Path, ns: argparse.Namespace, seeds: Sequence[int]) -> list[Run]:
    """The runs already under ``root`` whose configuration is this command's (rounds, caps
    draw, estimate, delays) for one of ``seeds``, recognised by their ``config.json``, in the
    order :func:`run_all` makes them (by seed, then scheme)."""
    runs: list[Run] = []
    for path in sorted(root.glob("*/summary.json")):
        cfg = ReduceRunConfig.from_dict(json.loads((path.parent / "config.json").read_text()))
        want = config(cfg.reduce.scheme, cfg.base.seed, ns, cfg.base.run_dir)
        if cfg.to_dict() == want.to_dict() and cfg.base.seed in seeds:
            runs.append((cfg.reduce.scheme, cfg.base.seed, json.loads(path.read_text())))
    order = {scheme: k for k, scheme in enumerate(SCHEMES)}
    return sorted(runs, key=lambda run: (run[1], order.get(run[0], len(order))))


def stamp_runs(
    run_dir: Path, seconds: float, state: tuple[str | None, bool | None]
) -> dict[str, Any]:
    """The provenance of runs just made: ``state`` (the commit and whether the whole tree
    differed from it, taken before the runs), the engine's code version and the seconds of
    runs; also written to ``run_dir/provenance.json``."""
    commit, dirty = state
    prov = {"git_commit": commit, "git_dirty": dirty,
            "code_version": code_version(skip=()), "run_seconds": round(seconds, 1)}  # fmt: skip
    (run_dir / "provenance.json").write_text(json.dumps(prov, indent=2))
    return prov


def write_record(out: Path, rows: list[dict[str, Any]], args: dict[str, Any],
                 prov: dict[str, Any]) -> str:  # fmt: skip
    """Write ``results.csv``, ``results.json`` and ``REPORT.md`` under ``out``; return the
    report's text."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    data = {"args": args, "provenance": prov, "rows": rows}
    (out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    text = report(data)
    (out / "REPORT.md").write_text(text)
    return text


def seed_list(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; anything else is refused by argparse with this message."""
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        msg = f"{text!r}: give comma-separated integers, e.g. 0,1,2"
        raise argparse.ArgumentTypeError(msg) from None
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: a seed appears twice")
    return seeds


def parser() -> argparse.ArgumentParser:
    """The command line (defaults in brackets in ``--help``)."""
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    p.add_argument("--rounds", type=int, default=20, help="rounds per worker [20]")
    p.add_argument("--max-mb-s", type=float, default=40.0, help="M of the caps [40]")
    p.add_argument("--bw-lambda", type=float, default=0.1, help="λ of the caps [0.1]")
    p.add_argument("--estimate", default="measured", choices=("measured", "known"))
    p.add_argument("--target", type=float, default=1.0, help="loss target [1.0]")
    p.add_argument("--seeds", type=seed_list, default="0,1,2",
                   help="comma-separated seeds [0,1,2]")  # fmt: skip
    p.add_argument("--schemes", default=",".join(SCHEMES))
    p.add_argument("--run-dir", default="", help="parent of the run folders [a temporary one]")
    p.add_argument("--out", default="records/report/selective_real", help="record folder")
    p.add_argument("--rescore", default="", help="score the run folders under DIR instead")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    """Run (or rescore) the schemes with every seed and write the record under ``--out``."""
    p = parser()
    ns = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    seeds = ns.seeds
    if ns.rescore:
        root = Path(ns.rescore)
        if not root.is_dir():
            p.error(f"--rescore {root}: no such folder (the record is left as it is)")
        runs = rescore(root, ns, seeds)
        if not runs:
            p.error(f"--rescore {root}: no run folder of this configuration and --seeds there "
                    "(the record is left as it is)")  # fmt: skip
        kept = root / "provenance.json"
        prov = {**(json.loads(kept.read_text()) if kept.exists() else {}), "rescored": True}
    else:
        root = Path(ns.run_dir or tempfile.mkdtemp(prefix="selective_real_"))
        root.mkdir(parents=True, exist_ok=True)
        print(f"run folders under {root}", flush=True)
        state = git_state(())  # before the runs: what the code was when they started
        t0 = time.monotonic()
        runs = run_all(ns, seeds, root)
        prov = stamp_runs(root, time.monotonic() - t0, state)
    rows = [row(scheme, seed, summary, ns.target) for scheme, seed, summary in runs]
    where = ("run_dir", "rescore", "out", "seeds")  # this machine's paths stay out of the file
    args = {**{k: v for k, v in vars(ns).items() if k not in where}, "seeds": seeds,
            "workers": WORKERS, "delays": list(DELAYS),
            "p": ReduceParams("partial").group_min(WORKERS)}  # fmt: skip
    print(write_record(Path(ns.out), rows, args, prov))


if __name__ == "__main__":
    main()

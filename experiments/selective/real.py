"""Real CPU runs of the all-reduce family: all reduce vs partial reduce vs selective reduce.

Eight worker processes on this machine (gloo), ``mlp-wide`` (1.23 M parameters, 4.9 MB: the
network dominates) on the synthetic set, heterogeneous compute (a fixed delay per worker and
round) and heterogeneous links (token bucket per worker, caps round(M·u, 3) MB/s with
u ~ U[λ, 1], the selective-reduce paper's draw scaled down). Every scheme runs the same ticket
budget (workers x rounds). Reported per scheme, from the run directory:

* ``sync_s``: mean sync time of a group (launch to the last member's report: delivery,
  group build, throttled reduce), the paper's "sync time";
* ``wait_s``: mean time a worker waited in the ready queue for its group;
* ``scale``: mean group size; ``syncs``; ``iterations`` (worker rounds reduced);
* ``wall_s``: training time (controller start to end);
* ``t_target_s``: first time the mean of the workers' latest training losses falls below
  ``--target`` (None: never).

Usage::

    python -m experiments.selective.real                      # defaults below, 3 schemes
    python -m experiments.selective.real --rounds 10 --target 1.0
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig

SCHEMES = ("allreduce", "partial", "selective")
#: Seconds of emulated compute per round, per worker (two stragglers).
DELAYS = (0.10, 0.12, 0.15, 0.10, 0.20, 0.12, 0.35, 0.50)


def config(scheme: str, ns: argparse.Namespace, run_dir: str) -> ReduceRunConfig:
    """The run of ``scheme`` with the flags' knobs."""
    base = ClusterConfig(
        workers=8, servers=1, model="mlp-wide", dataset="synthetic", batch_size=32, lr=0.02,
        max_iterations=ns.rounds, iteration_delays=DELAYS, timeout_s=60.0,
        run_timeout_s=600.0, run_dir=run_dir, eval_samples=0, progress_s=0.0, plots=False,
        seed=ns.seed,
    )  # fmt: skip
    return ReduceRunConfig(
        base=base, reduce=ReduceParams(scheme), link_max_mb_s=ns.max_mb_s,
        bw_lambda=ns.bw_lambda, bw_estimate=ns.estimate,
    )  # fmt: skip


def time_to_target(run_dir: Path, target: float) -> float | None:
    """First ready time at which the mean of every worker's latest loss is below ``target``."""
    with open(run_dir / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    events = sorted((float(r["t_start"]) + float(r["compute_s"]), int(r["worker"]),
                     float(r["loss"])) for r in rows)  # fmt: skip
    start = json.loads((run_dir / "summary.json").read_text())
    latest: dict[int, float] = {}
    for t, w, loss in events:
        latest[w] = loss
        if len(latest) == 8 and math.fsum(latest.values()) / 8 < target:
            return t - float(start.get("t_started") or 0.0)
    return None


def row(scheme: str, summary: dict[str, Any], target: float) -> dict[str, Any]:
    """One printed row."""
    run_dir = Path(summary["run_dir"])
    r3 = lambda v: None if v is None else round(float(v), 3)  # noqa: E731
    return {
        "scheme": scheme, "status": summary["status"], "sync_s": r3(summary["sync_time_s"]),
        "wait_s": r3(summary["queue_wait_s"]), "scale": r3(summary["scale"]),
        "syncs": summary["total_syncs"], "iterations": summary["total_iterations"],
        "wall_s": r3(summary["elapsed_s"]), "final_loss": r3(summary["final_loss"]),
        "t_target_s": r3(time_to_target(run_dir, target)),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20, help="rounds per worker [20]")
    parser.add_argument("--max-mb-s", type=float, default=40.0, help="M of the caps [40]")
    parser.add_argument("--bw-lambda", type=float, default=0.1, help="λ of the caps [0.1]")
    parser.add_argument("--estimate", default="measured", choices=("measured", "known"))
    parser.add_argument("--target", type=float, default=1.0, help="loss target [1.0]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--run-dir", default="")
    ns = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    run_dir = ns.run_dir or tempfile.mkdtemp(prefix="reduce_runtime_")
    caps = config("partial", ns, run_dir).link_caps()
    print(f"8 workers, mlp-wide (4.9 MB), caps MB/s {list(caps)}, delays s {list(DELAYS)}")
    for scheme in ns.schemes.split(","):
        run = run_local(config(scheme, ns, run_dir))
        if run.summary is None:
            print(json.dumps({"scheme": scheme, "status": "no summary", "exit": run.exitcodes}))
            continue
        print(json.dumps(row(scheme, run.summary, ns.target)), flush=True)


if __name__ == "__main__":
    main()

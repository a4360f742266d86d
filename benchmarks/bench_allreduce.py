"""All-reduce-family benchmark, simulator part: the speed of the selective-reduce simulator.

Goal: one 20-trial sweep point at n = 200 over 100 s of simulated training (the
paper's default setup, Transformer-trace proxy, analytic ring time) in under a minute on this
machine, for all three schemes together. Also reports the flow-level mode's cost on a smaller
point (it is the fidelity check, not the sweep engine). ``--runtime`` adds the runtime part
(``bench_allreduce_runtime.py``: dynamic-group creation and reduce latency on torch.distributed,
cached and uncached, vs a full all-reduce; threads and fds after 100 groups).

Usage::

    python benchmarks/bench_allreduce.py                   # 20 trials, n = 200
    python benchmarks/bench_allreduce.py --trials 5 --workers 120 --trace cnn
    python benchmarks/bench_allreduce.py --trials 0 --runtime    # the runtime part only
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.sim.reduce.engine import run_reduce_sim
from fl_r2sp.cluster.sim.reduce.result import summarize_trials
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec

GOAL_S = 60.0
SCHEMES = ("allreduce", "partial", "selective")


def sweep_point(n: int, trials: int, trace: str, network: str = "analytic") -> dict[str, object]:
    """Wall seconds per scheme for ``trials`` trials at ``n`` workers, and median metrics."""
    out: dict[str, object] = {}
    for scheme in SCHEMES:
        t0, c0 = time.perf_counter(), time.process_time()
        results = [
            run_reduce_sim(
                ReduceSimSpec(
                    ReduceParams(scheme), num_workers=n, trace=trace, seed=s, network=network
                )
            )
            for s in range(trials)
        ]
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        spread = summarize_trials(results, ("sync_time_s", "scale", "total_iterations"))
        out[scheme] = {
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),  # this process only: less noisy on a shared machine
            "per_trial_s": round(wall / trials, 3),
            **{f"median_{k}": round(v["median"], 4) for k, v in spread.items()},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--trace", default="transformer", choices=("transformer", "cnn"))
    parser.add_argument(
        "--flow-workers",
        type=int,
        default=40,
        help="n of the flow-level point (2 trials); 0 skips it",
    )
    parser.add_argument("--runtime", action="store_true", help="also run the runtime part")
    ns = parser.parse_args()
    if ns.trials > 0:
        _simulator(ns)
    if ns.runtime:
        from bench_allreduce_runtime import main as runtime_main  # this script's folder

        sys.argv = [sys.argv[0]]
        runtime_main()


def _simulator(ns: argparse.Namespace) -> None:
    point = sweep_point(ns.workers, ns.trials, ns.trace)
    total = sum(v["wall_s"] for v in point.values())  # type: ignore[index]
    print(f"sweep point: n={ns.workers}, {ns.trials} trials, 100 s simulated, {ns.trace}")
    for scheme, row in point.items():
        print(f"  {scheme:10s} {json.dumps(row)}")
    verdict = "meets" if total < GOAL_S else "misses"
    print(f"  all schemes: {total:.1f} s wall ({verdict} the {GOAL_S:.0f} s goal)")
    if ns.flow_workers:
        flow = sweep_point(ns.flow_workers, 2, ns.trace, network="flow")
        ana = sweep_point(ns.flow_workers, 2, ns.trace)
        print(f"flow-level vs analytic, n={ns.flow_workers}, 2 trials:")
        for scheme in SCHEMES:
            print(f"  {scheme:10s} flow {json.dumps(flow[scheme])}")
            print(f"  {scheme:10s} anal {json.dumps(ana[scheme])}")


if __name__ == "__main__":
    main()

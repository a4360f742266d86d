"""Emulation engine benchmark: events/s, cost per flow-set change, long timing-only runs.

Run: ``python benchmarks/bench_emulation.py [--rounds R] [--churn-events E]``.

1. Flow churn on a star network: N flows in flight (N = 10, 100, 1000); each
   completion starts a new flow of random size for the same client. Reports
   completions/s and wall time per flow-set change (one rate recomputation),
   and the water-filling kernel alone, for fair and fcfs server links.
2. 1,000 clients x R rounds of BSP (collect 750) and of a 16-group
   round-robin schedule (each group collects 47 of 62-63), CNN 0.25 MB on
   paper-ec2, using the timing driver of ``emulation_driver.py``; the wall time
   of 1,000 rounds is extrapolated linearly from R (printed as such).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from emulation_driver import TimingRun
from fl_r2sp.emulation import get_profile, pull_links, star_network
from fl_r2sp.emulation.maxmin import link_matrix, waterfill


def churn(n_flows: int, profile: str, events: int, seed: int = 0) -> tuple[float, float]:
    """Return (completions per second, wall seconds per flow-set change)."""
    rng = np.random.default_rng(seed)
    net = star_network(n_flows, get_profile(profile), record=(), keep_finished=False)
    for cid in range(n_flows):
        net.start_flow(0.0, float(rng.uniform(1e5, 1e6)), pull_links(cid), tag=cid)
    done_count = changes = 0
    t0 = time.perf_counter()
    while done_count < events:
        t, _ = net.next_completion()  # type: ignore[misc]
        done = net.advance(t)
        changes += 1
        for fid, t_end in done:
            cid = net.flow_info(fid).tag
            net.start_flow(t_end, float(rng.uniform(1e5, 1e6)), pull_links(cid), tag=cid)
        done_count += len(done)
    wall = time.perf_counter() - t0
    return done_count / wall, wall / changes


def kernel_cost(n_flows: int, repeats: int = 200) -> float:
    """Wall seconds of one water-filling call: n flows over one shared link + own links."""
    rng = np.random.default_rng(1)
    mat = link_matrix([[0, 1 + i] for i in range(n_flows)])
    cap = np.concatenate(([np.inf, 8.3e6], rng.uniform(5e4, 2e5, n_flows)))
    t0 = time.perf_counter()
    for _ in range(repeats):
        waterfill(mat, cap)
    return (time.perf_counter() - t0) / repeats


def long_run(groups: int, rounds: int) -> tuple[float, int, float]:
    """(wall seconds, events, virtual seconds) for 1,000 clients and ``rounds`` rounds."""
    collect = int(np.ceil(0.75 * 1000 / groups))
    run = TimingRun(1000, groups, collect, "paper-ec2", 0.25e6)
    t0 = time.perf_counter()
    stats = run.run(rounds * groups)
    return time.perf_counter() - t0, stats.events, stats.end_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10, help="rounds measured of the 1,000")
    parser.add_argument("--churn-events", type=int, default=20_000)
    args = parser.parse_args()
    print("flow churn (completions/s; us per flow-set change; us per water-filling call)")
    for n in (10, 100, 1000):
        kernel = kernel_cost(n) * 1e6
        for profile in ("paper-ec2", "paper-ec2-fcfs"):
            rate, per_change = churn(n, profile, min(args.churn_events, 40 * n + 2000))
            print(f"  N={n:5d} {profile:15} {rate:10.0f} ev/s {per_change * 1e6:8.1f} us/change"
                  f"   kernel {kernel:7.1f} us")
    print(f"1,000 clients, CNN 0.25 MB, paper-ec2; measured {args.rounds} rounds, x{1000 / args.rounds:g}")
    for name, groups in (("BSP", 1), ("RR-16", 16)):
        wall, events, virt = long_run(groups, args.rounds)
        print(f"  {name:6} {wall:7.2f} s wall for {args.rounds} rounds ({events} events, "
              f"{events / wall:8.0f} ev/s, {virt:8.1f} virtual s) -> 1,000 rounds ~ "
              f"{wall * 1000 / args.rounds / 60:6.1f} min (extrapolated)")


if __name__ == "__main__":
    main()

"""Emulation engine benchmark: events/s, cost per flow-set change, long timing-only runs.

Run: ``python benchmarks/bench_emulation.py [--rounds R] [--churn-events E] [--no-general]``.

Every figure is printed for the default engine (``fast_path=True``: exact
per-link processor-sharing / FIFO queues, ``O(log n)`` per change) and, side by
side, for the general water-filling solver (``fast_path=False``) unless
``--no-general``.

1. Flow churn on a star network: N flows in flight (N = 10, 100, 1000); each
   completion starts a new flow of random size (drawn in blocks, see
   :func:`flow_sizes`) for the same client. Reports
   completions/s and wall time per flow-set change (one rate recomputation),
   and the water-filling kernel alone, for fair and fcfs server links.
2. 1,000 clients x R rounds of BSP and of FL-R²SP with 16 groups (C = 0.75),
   CNN 0.25 MB on paper-ec2: the shipped policies through the in-process
   runner, timing-only (``timing_runs.py``), so the cost includes the policy,
   the virtual-time loop and the echoing clients, not only the network. The
   time of 1,000 rounds is extrapolated linearly from R (printed as such).

Times are CPU seconds of this process (``time.process_time``), so that a
loaded shared host inflates them less than wall time would; the wall time of
each long run is printed too.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator

import numpy as np
from timing_runs import TimedRun, timed_run, timing_config, warm_up

from fl_r2sp.emulation import get_profile, pull_links, star_network
from fl_r2sp.emulation.maxmin import link_matrix, waterfill


def flow_sizes(seed: int, block: int = 4096) -> Iterator[float]:
    """Flow sizes uniform in [1e5, 1e6) bytes, drawn in blocks.

    Same values, in the same order, as one ``rng.uniform(1e5, 1e6)`` per flow,
    without a ~1 us NumPy call per event inside the measured loop.
    """
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.uniform(1e5, 1e6, block).tolist()


def churn(
    n_flows: int, profile: str, events: int, seed: int = 0, fast: bool = True
) -> tuple[float, float]:
    """Return (completions per CPU second, CPU seconds per flow-set change)."""
    sizes = flow_sizes(seed)
    net = star_network(
        n_flows, get_profile(profile), record=(), keep_finished=False, fast_path=fast
    )
    for cid in range(n_flows):
        net.start_flow(0.0, next(sizes), pull_links(cid), tag=cid)
    done_count = changes = 0
    t0 = time.process_time()
    while done_count < events:
        t, _ = net.next_completion()  # type: ignore[misc]
        done = net.advance(t)
        changes += 1
        for fid, t_end in done:
            cid = net.flow_info(fid).tag
            net.start_flow(t_end, next(sizes), pull_links(cid), tag=cid)
        done_count += len(done)
    cpu = time.process_time() - t0
    return done_count / cpu, cpu / changes


def kernel_cost(n_flows: int, distinct_caps: bool, repeats: int = 200) -> float:
    """CPU seconds of one water-filling call: n flows over one shared link + own links.

    ``distinct_caps``: client caps drawn around the fair share (many bottleneck
    levels, the solver's hard case); otherwise paper-ec2's equal 16.8 MB/s caps.
    """
    rng = np.random.default_rng(1)
    mat = link_matrix([[0, 1 + i] for i in range(n_flows)])
    client = (
        rng.uniform(0.5, 2.0, n_flows) * 8.3e6 / n_flows
        if distinct_caps
        else np.full(n_flows, 16.8e6)
    )
    cap = np.concatenate(([np.inf, 8.3e6], client))
    t0 = time.process_time()
    for _ in range(repeats):
        waterfill(mat, cap)
    return (time.process_time() - t0) / repeats


def long_run(strategy: str, groups: int, rounds: int, fast: bool = True) -> TimedRun:
    """Timing-only run of ``strategy`` with 1,000 clients for ``rounds`` rounds per group."""
    return timed_run(timing_config(strategy, 1000, groups, rounds, "paper-ec2"), fast_path=fast)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10, help="rounds measured of the 1,000")
    parser.add_argument("--churn-events", type=int, default=20_000)
    parser.add_argument("--no-general", action="store_true", help="skip the general-solver figures")
    args = parser.parse_args()
    engines = [("fast", True)] + ([] if args.no_general else [("general", False)])
    print("flow churn: completions per CPU second, CPU us per flow-set change;")
    print(
        "water-filling kernel alone (general engine): CPU us per call (equal caps / distinct caps)"
    )
    for n in (10, 100, 1000):
        kernel = kernel_cost(n, False) * 1e6, kernel_cost(n, True) * 1e6
        for profile in ("paper-ec2", "paper-ec2-fcfs"):
            cols = []
            for label, fast in engines:
                rate, per_change = churn(
                    n, profile, min(args.churn_events, 40 * n + 2000), fast=fast
                )
                cols.append(f"{label} {rate:8.0f} ev/s {per_change * 1e6:7.1f} us")
            print(
                f"  N={n:5d} {profile:15} "
                + " | ".join(cols)
                + f" | kernel {kernel[0]:6.1f} / {kernel[1]:6.1f} us"
            )
    print(
        f"1,000 clients, CNN 0.25 MB, paper-ec2, shipped policies through the in-process "
        f"runner; measured {args.rounds} rounds, x{1000 / args.rounds:g}"
    )
    warm_up()
    for name, strategy, groups in (("BSP", "bsp", 1), ("FL-16", "fl-r2sp", 16)):
        for label, fast in engines:
            r = long_run(strategy, groups, args.rounds, fast)
            n, virt = r.summary["replies_received"], r.summary["virtual_time_s"]
            print(
                f"  {name:6} {label:7} {r.cpu_s:7.2f} s CPU ({r.wall_s:.2f} s wall) for "
                f"{args.rounds} rounds: {n} client updates, {n / r.cpu_s:6.0f} updates/s, "
                f"{virt:7.1f} virtual s -> 1,000 rounds ~ "
                f"{r.cpu_s * 1000 / args.rounds / 60:5.2f} CPU min (extrapolated)"
            )


if __name__ == "__main__":
    main()

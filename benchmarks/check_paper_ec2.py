"""Timing-only check of the paper-ec2 profiles against the paper's Tables IV/V (CNN).

128 clients, the CNN's size (62k float32 parameters, 0.25 MB), 100 local
iterations x 70 ms, log-normal(-2, 1) delays, C = 0.75; BSP is one group of
128, FL-R²SP 8 groups of 16. Both run the shipped policies through the
in-process runner (``benchmarks/timing_runs.py``). Prints average pull / push /
round time over the whole run beside the paper's and the calibration note's
figures. Run: ``python benchmarks/check_paper_ec2.py [--rounds 200] [--seed 0]``.
"""

from __future__ import annotations

import argparse

from timing_runs import timed_run, timing_config

# (scheme) -> (pull, push, round) from Table V / Table IV.
PAPER = {"BSP": (2.73, 0.38, 10.69), "FL-R2SP": (0.38, 0.34, 8.31)}
# The calibration's estimates (docs/paper-notes.md §4).
NOTE = {
    ("paper-ec2", "BSP"): (3.5, 3.0, 14.0),
    ("paper-ec2", "FL-R2SP"): (0.44, 0.22, 7.8),
    ("paper-ec2-fcfs", "BSP"): (3.4, 0.20, 12.9),
    ("paper-ec2-fcfs", "FL-R2SP"): (0.50, 0.14, 8.0),
}
SCHEMES = (("BSP", "bsp", 1), ("FL-R2SP", "fl-r2sp", 8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--rounds", type=int, default=200, help="rounds per group (FL-R²SP: x 8 applications)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"{'profile':15} {'scheme':8} {'pull':>6} {'push':>6} {'round':>6}"
        "   paper (pull push round)   note"
    )
    for profile in ("paper-ec2", "paper-ec2-fcfs"):
        for scheme, strategy, groups in SCHEMES:
            cfg = timing_config(strategy, 128, groups, args.rounds, profile, args.seed)
            s = timed_run(cfg).summary
            paper, note = PAPER[scheme], NOTE[(profile, scheme)]
            print(
                f"{profile:15} {scheme:8} {s['avg_pull_s']:6.2f} {s['avg_push_s']:6.2f} "
                f"{s['avg_round_s']:6.2f}   {paper[0]:5.2f} {paper[1]:5.2f} {paper[2]:6.2f}     "
                f"{note[0]:4.2f} {note[1]:4.2f} {note[2]:5.1f}"
            )
    print("round = a group's release -> C-th update arrival (BSP: the single group).")


if __name__ == "__main__":
    main()

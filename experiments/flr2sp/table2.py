"""Table II: communication slowdown under contention (BSP, 50 local iterations).

Average communication time per round (pull + push, synchronisation waits
excluded) of 128 clients against one client alone, for CNN, LSTM and
ResNet20 model sizes, on both server disciplines (fair sharing and a
first-come-first-served sender). Timing-only: runs at the paper's size.

Paper: 34.0x (CNN), 14.3x (LSTM), 15.2x (ResNet20).
"""

from __future__ import annotations

from experiments.common.run_cache import aggregate, finish, models, parse_args, say
from experiments.flr2sp.runs import NETWORKS, comm, ratio, timing

#: Differences from the timing defaults: Table II reports every 50 iterations.
DIFF = dict(local_iterations=50)


def main(argv=None) -> None:
    args = parse_args("table2", __doc__, argv)
    rows = []
    for model in models(args, "timing"):
        for disc, network in NETWORKS.items():
            for seed in args.seeds:
                many = timing(args, seed, "bsp", model, network=network, **DIFF)["summary"]
                alone = timing(args, seed, "bsp", model, network=network, num_partitions=1, **DIFF)[
                    "summary"
                ]
                rows.append(
                    dict(
                        model=model,
                        discipline=disc,
                        seed=seed,
                        contended_s=comm(many),
                        alone_s=comm(alone),
                        slowdown=ratio(comm(many), comm(alone)),
                    )
                )
    say("table2: aggregating")
    finish(
        args, rows, aggregate(rows, ("model", "discipline"), ("contended_s", "alone_s", "slowdown"))
    )


if __name__ == "__main__":
    main()

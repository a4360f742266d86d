"""Fig. 18: average round time vs group size (2 ... 64 of 128 clients), FL-R²SP.

Two round times: the group round (release of a group's model to the C-th
update, the engine's ``avg_round_s``) and the client cycle (dispatch to next
dispatch, which includes waiting for the group's turn: the gap-enforcement
overhead the paper blames for small groups). Timing-only at the paper's size
on the fair-sharing profile; smoke uses 16 clients and sizes 2..8.

Paper: U-shape, best at 32.
"""

from __future__ import annotations

from experiments.common import aggregate, finish, models, parse_args
from experiments.conf import scale_settings
from experiments.runs import timing

SIZES = (2, 4, 8, 16, 32, 64)
METRICS = ("avg_round_s", "avg_cycle_s", "avg_pull_s", "avg_push_s", "avg_turn_wait_s")


def sizes(scale: str) -> tuple[int, ...]:
    """Group sizes that divide the scale's client count and leave at least 2 groups."""
    n = scale_settings("timing", scale)["num_partitions"]
    return tuple(g for g in SIZES if n % g == 0 and n // g >= 2)


def main(argv=None) -> None:
    args = parse_args("fig18", __doc__, argv)
    default = scale_settings("timing", args.scale)["group_size"]
    rows = []
    for model in models(args, "timing"):
        for size in sizes(args.scale):
            for seed in args.seeds:
                # The default group size is the Table V run: pass no diff so it is shared.
                diff = {} if size == default else {"group_size": size}
                s = timing(args, seed, "fl-r2sp", model, network="paper-ec2", **diff)["summary"]
                rows.append(dict(model=model, group_size=size, seed=seed,
                                 **{k: s.get(k) for k in METRICS}))
    table = aggregate(rows, ("model", "group_size"), METRICS)
    best = {}
    for model in {r["model"] for r in table}:
        mine = [r for r in table if r["model"] == model]
        best[model] = {k: min(mine, key=lambda r: r[f"{k}_mean"])["group_size"]
                       for k in ("avg_round_s", "avg_cycle_s")}
    finish(args, rows, table, {"best_group_size": best})


if __name__ == "__main__":
    main()

"""Fig. 18: average round time vs group size (2 ... 64 of 128 clients), FL-R²SP.

Two round times: the group round (release of a group's model to the C-th
update, the engine's ``avg_round_s``) and the client cycle (dispatch to next
dispatch, which includes waiting for the group's turn: the gap-enforcement
overhead the paper blames for small groups). Timing-only at the paper's size
on the fair-sharing profile; smoke uses 16 clients and sizes 2..8.

The baseline model has nothing that penalises small groups but the delay
tail. :data:`VARIANTS` add, one at a time and then together, the small-group
costs the paper's testbed has and the baseline lacks, so the report shows
which assumption moves the best group size:

* ``overhead``: a fixed per-transfer cost on every pull and push (the
  paper's FL-R²SP pushes never drop below about 0.34 s, Table V);
* ``jitter``: per-job compute slowdown ``1 + 0.2 x Exp(1)`` (device speed
  drawn per round, not only per client);
* ``dropout``: each job is interrupted with probability 0.05 and the client
  is offline for an exponential time of mean 30 s (Bernoulli dropouts);
* ``all``: the three together.

The values are assumptions (the paper does not measure them), stated here
and in the report.

Paper: U-shape, best at 32.
"""

from __future__ import annotations

from typing import Any

from experiments.common.conf import scale_settings
from experiments.common.run_cache import aggregate, finish, models, parse_args
from experiments.flr2sp.runs import timing

SIZES = (2, 4, 8, 16, 32, 64)
METRICS = ("avg_round_s", "avg_cycle_s", "avg_pull_s", "avg_push_s", "avg_turn_wait_s")
#: Per-transfer overhead (s), per-job jitter scale and the dropout model of the variants.
OVERHEAD_S, JITTER, DROPOUT = 0.3, 0.2, "bernoulli(p=0.05,down=30)"
VARIANTS: dict[str, dict[str, str]] = {
    "baseline": {},
    "overhead": {"network": f"paper-ec2(overhead={OVERHEAD_S})"},
    "jitter": {"device": f"profile(jitter={JITTER})"},
    "dropout": {"dropout": DROPOUT},
    "all": {
        "network": f"paper-ec2(overhead={OVERHEAD_S})",
        "device": f"profile(jitter={JITTER})",
        "dropout": DROPOUT,
    },
}


def sizes(scale: str) -> tuple[int, ...]:
    """Group sizes that divide the scale's client count and leave at least 2 groups."""
    n = scale_settings("timing", scale)["num_partitions"]
    return tuple(g for g in SIZES if n % g == 0 and n // g >= 2)


def best_sizes(table: list[dict]) -> dict[str, dict[str, dict[str, int]]]:
    """Variant -> model -> {metric: group size with the smallest mean}."""
    best: dict[str, dict[str, dict[str, int]]] = {}
    for variant in dict.fromkeys(r["variant"] for r in table):
        for model in dict.fromkeys(r["model"] for r in table):
            mine = [r for r in table if (r["variant"], r["model"]) == (variant, model)]
            if mine:
                best.setdefault(variant, {})[model] = {
                    k: min(mine, key=lambda r: r[f"{k}_mean"])["group_size"]
                    for k in ("avg_round_s", "avg_cycle_s")
                }
    return best


def main(argv=None) -> None:
    args = parse_args("fig18", __doc__, argv)
    default = scale_settings("timing", args.scale)["group_size"]
    rows = []
    for variant, knobs in VARIANTS.items():
        for model in models(args, "timing"):
            for size in sizes(args.scale):
                for seed in args.seeds:
                    # The default group size is the Table V run: pass no diff so it is shared.
                    diff: dict[str, Any] = {} if size == default else {"group_size": size}
                    diff.update(knobs)
                    diff.setdefault("network", "paper-ec2")
                    s = timing(args, seed, "fl-r2sp", model, **diff)["summary"]
                    rows.append(
                        dict(
                            variant=variant,
                            model=model,
                            group_size=size,
                            seed=seed,
                            **{k: s.get(k) for k in METRICS},
                        )
                    )
    table = aggregate(rows, ("variant", "model", "group_size"), METRICS)
    best = best_sizes(table)
    finish(
        args,
        rows,
        table,
        {
            "best_group_size": best.get("baseline", {}),
            "best_by_variant": best,
            "variants": {k: dict(v) for k, v in VARIANTS.items()},
        },
    )


if __name__ == "__main__":
    main()

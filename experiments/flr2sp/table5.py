"""Table V: average push and pull time per round, BSP vs FL-R²SP, and the speedup.

Speedup = 1 - (push + pull)[FL-R²SP] / (push + pull)[BSP], the reduction the
paper prints. Timing-only at the paper's size (128 clients, 8 groups of 16,
C = 0.75, tau = 100), on both server disciplines: fair sharing (``paper-ec2``)
and a first-come-first-served sender (``paper-ec2-fcfs``).

Paper: 76.5% (CNN), 71.7% (LSTM), 86.3% (ResNet20).
"""

from __future__ import annotations

from experiments.common.run_cache import aggregate, finish, models, parse_args
from experiments.flr2sp.runs import NETWORKS, comm, ratio, timing

STRATEGIES = ("bsp", "fl-r2sp")
METRICS = (
    "bsp_push_s",
    "bsp_pull_s",
    "flr2sp_push_s",
    "flr2sp_pull_s",
    "speedup",
    "pull_ratio",
    "bsp_round_s",
    "flr2sp_round_s",
    "round_reduction",
)


def pair(args, seed: int, model: str, network: str, **diff) -> dict[str, dict]:
    """Summaries of BSP and FL-R²SP with the same knobs (shared with other items)."""
    return {s: timing(args, seed, s, model, network=network, **diff)["summary"] for s in STRATEGIES}


def row_of(model: str, disc: str, seed: int, runs: dict[str, dict]) -> dict:
    """One table row from a :func:`pair`."""
    b, f = runs["bsp"], runs["fl-r2sp"]
    reduction = ratio(comm(f), comm(b))
    rounds = ratio(f["avg_round_s"], b["avg_round_s"])
    return dict(
        model=model,
        discipline=disc,
        seed=seed,
        bsp_push_s=b["avg_push_s"],
        bsp_pull_s=b["avg_pull_s"],
        flr2sp_push_s=f["avg_push_s"],
        flr2sp_pull_s=f["avg_pull_s"],
        speedup=None if reduction is None else 1 - reduction,
        pull_ratio=ratio(b["avg_pull_s"], f["avg_pull_s"]),
        bsp_round_s=b["avg_round_s"],
        flr2sp_round_s=f["avg_round_s"],
        round_reduction=None if rounds is None else 1 - rounds,
    )


def main(argv=None) -> None:
    args = parse_args("table5", __doc__, argv)
    rows = [
        row_of(model, disc, seed, pair(args, seed, model, network))
        for model in models(args, "timing")
        for disc, network in NETWORKS.items()
        for seed in args.seeds
    ]
    finish(args, rows, aggregate(rows, ("model", "discipline"), METRICS))


if __name__ == "__main__":
    main()

"""Table IV: average per-round time and convergence time, BSP vs FL-R²SP.

Two parts, because they need different scales:

* per-round time at the paper's size, timing-only (the Table V runs, both
  server disciplines): the group round (release to the C-th update) and the
  client cycle (dispatch to next dispatch, turn waits included);
* convergence time with real training at the scale's size: the virtual time
  at the start of the 10-evaluation window in which test accuracy stopped
  improving by more than ``convergence_tol`` (None = not converged within the
  round cap). Improvement = 1 - conv[FL-R²SP] / conv[BSP].

Paper: -22.4% (CNN), -13.9% (LSTM), -11.1% (ResNet20).
"""

from __future__ import annotations

from experiments.common import aggregate, finish, models, parse_args
from experiments.fig15 import scheme_run
from experiments.runs import NETWORKS, ratio
from experiments.table5 import pair

ROUND_METRICS = ("bsp_round_s", "flr2sp_round_s", "bsp_cycle_s", "flr2sp_cycle_s", "round_reduction")
CONV_METRICS = ("bsp_conv_s", "flr2sp_conv_s", "improvement", "bsp_round_s", "flr2sp_round_s",
                "bsp_rounds", "flr2sp_rounds", "bsp_acc", "flr2sp_acc")


def round_rows(args) -> list[dict]:
    rows = []
    for model in models(args, "timing"):
        for disc, network in NETWORKS.items():
            for seed in args.seeds:
                b, f = pair(args, seed, model, network).values()
                red = ratio(f["avg_round_s"], b["avg_round_s"])
                rows.append(dict(model=model, discipline=disc, seed=seed,
                                 bsp_round_s=b["avg_round_s"], flr2sp_round_s=f["avg_round_s"],
                                 bsp_cycle_s=b["avg_cycle_s"], flr2sp_cycle_s=f["avg_cycle_s"],
                                 round_reduction=None if red is None else 1 - red))
    return rows


def conv_rows(args) -> list[dict]:
    rows = []
    for model in models(args, "training"):
        for seed in args.seeds:
            b, f = (scheme_run(args, seed, model, s)["summary"] for s in ("bsp", "fl-r2sp"))
            imp = ratio(f.get("converged_at"), b.get("converged_at"))
            rows.append(dict(model=model, seed=seed, bsp_conv_s=b.get("converged_at"),
                             flr2sp_conv_s=f.get("converged_at"),
                             improvement=None if imp is None else 1 - imp,
                             bsp_round_s=b["avg_round_s"], flr2sp_round_s=f["avg_round_s"],
                             bsp_rounds=rounds_to(b), flr2sp_rounds=rounds_to(f),
                             bsp_acc=b.get("final_accuracy"), flr2sp_acc=f.get("final_accuracy")))
    return rows


def rounds_to(summary: dict) -> float | None:
    """Convergence time over the per-round time: the paper's implied round count."""
    return ratio(summary.get("converged_at"), summary.get("avg_round_s"))


def main(argv=None) -> None:
    args = parse_args("table4", __doc__, argv)
    rounds = round_rows(args)
    conv = conv_rows(args)
    table = aggregate(conv, ("model",), CONV_METRICS)
    finish(args, conv, table,
           {"round_time": aggregate(rounds, ("model", "discipline"), ROUND_METRICS)})


if __name__ == "__main__":
    main()

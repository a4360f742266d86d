"""Round time and accuracy vs C (the fraction of a group's updates awaited).

* Round time: timing-only at the paper's size (CNN), BSP and FL-R²SP, fair
  sharing; C in :data:`FRACTIONS`.
* Accuracy: FL-R²SP with real training at the scale's size (first model).

The paper puts this study in its appendix, which is not available: there are
no numbers to compare with.
"""

from __future__ import annotations

from experiments.common import eta
from experiments.common.run_cache import aggregate, finish, models, parse_args
from experiments.flr2sp.runs import timing, training

FRACTIONS = (0.5, 0.75, 1.0)
DEFAULT_C = 0.75
T_METRICS = ("avg_round_s", "avg_cycle_s", "avg_pull_s", "avg_push_s")
A_METRICS = ("final_accuracy", "best_accuracy", "converged_at", "avg_round_s")


def diff_of(c: float) -> dict:
    """No diff at the default C, so the runs are shared with Table V / Fig. 15."""
    return {} if c == DEFAULT_C else {"fraction": c}


def main(argv=None) -> None:
    args = parse_args("c_sweep", __doc__, argv)
    eta.plan(len(FRACTIONS) * len(args.seeds) * 3)  # BSP and FL-R²SP timing, FL-R²SP training
    t_rows, a_rows, missing = [], [], []
    model = "cnn" if "cnn" in models(args, "timing") else models(args, "timing")[0]
    for c in FRACTIONS:
        for seed in args.seeds:
            for strategy in ("bsp", "fl-r2sp"):
                s = timing(args, seed, strategy, model, network="paper-ec2", **diff_of(c))[
                    "summary"
                ]
                t_rows.append(
                    dict(
                        strategy=strategy, fraction=c, seed=seed, **{k: s.get(k) for k in T_METRICS}
                    )
                )
    tmodel = models(args, "training")[0]
    # C = 0.75 last: that run is shared with Fig. 15 and likely cached by then.
    for c in sorted(FRACTIONS, key=lambda f: f == DEFAULT_C):
        for seed in args.seeds:
            rec = training(args, seed, "fl-r2sp", tmodel, **diff_of(c))
            if rec is None:  # not cached under --skip-training
                missing.append(dict(case=f"fl-r2sp C = {c}", seed=seed))
            else:
                a_rows.append(
                    dict(
                        strategy="fl-r2sp",
                        fraction=c,
                        seed=seed,
                        **{k: rec["summary"].get(k) for k in A_METRICS},
                    )
                )
    finish(
        args,
        t_rows + a_rows,
        aggregate(t_rows, ("strategy", "fraction"), T_METRICS),
        {"accuracy": aggregate(a_rows, ("strategy", "fraction"), A_METRICS), "missing": missing},
    )


if __name__ == "__main__":
    main()

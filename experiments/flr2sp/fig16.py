"""Fig. 16: Gantt chart of all clients over three rounds, BSP vs FL-R²SP (CNN).

Phases per client: pull, local training (+ injected delay), push, wait for
aggregation. Uses the Table V runs (fair sharing and FCFS, CNN size): the
window is three client cycles around the middle of the run (the paper shows
rounds 100-102; laptop runs have fewer rounds, so this is a steady-state
window rather than round 100). The table gives the per-job phase means and
the spread of the inter-update gaps (cv: 0 = evenly gapped).
"""

from __future__ import annotations

from experiments.common.run_cache import aggregate, finish, load_jobs, parse_args, say
from experiments.flr2sp.runs import NETWORKS, timing

STRATEGIES = ("bsp", "fl-r2sp")
PHASES = ("avg_pull_s", "avg_train_s", "avg_push_s", "avg_wait_s", "avg_cycle_s", "cv_update_gap")


def gantt(args, rec: dict, name: str) -> None:
    """Draw a three-cycle window from the middle of the run."""
    from fl_r2sp.telemetry.plots import plot_gantt

    s = rec["summary"]
    width = 3 * (s.get("avg_cycle_s") or s["avg_round_s"])
    start = max(0.0, s["virtual_time_s"] / 2 - width / 2)
    path = args.item_dir / f"gantt-{name}.png"
    plot_gantt(
        load_jobs(args, rec),
        path,
        start,
        start + width,
        title=f"{name}: t = {start:.0f}..{start + width:.0f} s",
    )
    say(f"fig16: wrote {path}")


def main(argv=None) -> None:
    args = parse_args("fig16", __doc__, argv)
    model = "cnn"
    rows = []
    for disc, network in NETWORKS.items():
        for seed in args.seeds:
            for strategy in STRATEGIES:
                rec = timing(args, seed, strategy, model, network=network)
                rows.append(
                    dict(
                        strategy=strategy,
                        discipline=disc,
                        seed=seed,
                        **{k: rec["summary"].get(k) for k in PHASES},
                    )
                )
                if seed == args.seeds[0]:
                    gantt(args, rec, f"{strategy}-{disc}")
    finish(args, rows, aggregate(rows, ("strategy", "discipline"), PHASES))


if __name__ == "__main__":
    main()

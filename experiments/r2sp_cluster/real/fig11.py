"""Fig. 11 of the R²SP paper in small real CPU runs: R²SP without and with batch tuning.

ResNet-32 / CIFAR-10 (first 10,000 training images, batch 16), 4 workers with the compute
multipliers of cluster B's speeds (g2.2x, p2.x, g3.4x, g3.4x: 2.14, 1.46, 1, 1), 1 PS
unthrottled; target loss 2.2; the idle rule (:func:`fl_r2sp.cluster.policies.idle_rule`) tunes.
At most 80 iterations per worker: with 40, neither arm held the target in any of 3 seeds (final
mean losses 2.19 and 2.20 against 2.2), so the item could not say whether tuning shortens the
time to it.
Emulated dedicated devices (``compute_model="emulated"``): a worker's compute lasts the run's
base per-sample cost (``sample_cost_s`` auto: measured by all workers together, median, the
same for every worker, once per seed by the untuned run and pinned for the tuned run of that
seed, :func:`~experiments.r2sp_cluster.real.runs.collect`) × batch × multiplier, so a tuned batch
does not slow the other workers by taking this shared machine's cores (the paper's workers are
separate machines) and both arms of a seed run on identical emulated devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.r2sp_cluster.real import cli
from experiments.r2sp_cluster.real.figures import plot_fig11
from experiments.r2sp_cluster.real.runs import (
    FIG11_TIME_RATIO,
    collect,
    config,
    mean,
    means,
    multipliers,
    norm_verdict,
    paired,
    write_records,
)
from experiments.r2sp_cluster.twin.setting import claim
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.schemes import scheme_params


def fig11_config(tuning: str, seed: int) -> ClusterConfig:
    """Fig. 11's R²SP run with ``tuning``: ResNet-32 / CIFAR-10 on cluster-B multipliers."""
    params = scheme_params("r2sp", tuning=tuning, t_seed="probe")
    return config(
        workers=4, servers=1, scheme=params, model="resnet32", dataset="cifar10",
        max_train=10_000, batch_size=16, lr=0.05, max_iterations=80,
        loss_threshold=2.2, compute_multipliers=multipliers(("g2.2x", "p2.x", "g3.4x", "g3.4x")),
        compute_model="emulated", seed=seed,
        timeout_s=240.0, run_timeout_s=360.0,  # loading CIFAR-10 takes a while
    )  # fmt: skip


def fig11(out: Path, seeds: Sequence[int], fresh: bool) -> dict[str, Any]:
    """R²SP with and without batch tuning on heterogeneous workers: time to the target."""
    recs = collect(out, "fig11", ("none", "idle"), seeds, fig11_config, fresh)
    table = []
    for lab in ("none", "idle"):
        row = {"tuning": lab, **means(recs, lab, seeds)}
        row["time_ratio"] = paired(recs, lab, "none", "time_to_target_s", seeds)
        row["iterations_ratio"] = paired(recs, lab, "none", "iterations_to_target", seeds)
        row["mean_batch"] = mean([recs[(lab, s)]["mean_batch"] for s in seeds])
        table.append(row)
    tuned = table[1]
    tuned.update(
        paper_time_ratio=FIG11_TIME_RATIO,
        verdict_time=norm_verdict(tuned["time_ratio"], FIG11_TIME_RATIO, seeds),
    )
    plot_fig11(out / "fig11" / "fig11.png", recs, seeds)
    times = [(recs[("idle", s)]["time_to_target_s"], recs[("none", s)]["time_to_target_s"])
             for s in seeds]  # fmt: skip
    claims = {"tuning reaches the target sooner": sooner(times)}
    return write_records(out, "fig11", recs, table, seeds, claims)


def sooner(pairs: Sequence[tuple[float | None, float | None]]) -> str:
    """Claim verdict over seeds: (tuned, untuned) times to the target, None = not reached.

    A seed counts for tuning if only the tuned run reached the target or both did and the tuned
    one sooner; against it if only the untuned run reached it or both did and it was sooner;
    "holds" needs a majority of the seeds where either run reached the target.
    """
    votes = [
        (a is not None) and (b is None or a < b) for a, b in pairs if a is not None or b is not None
    ]
    return "n/a" if not votes else claim(2 * sum(votes) > len(votes))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.r2sp_cluster.real.fig11``: this item alone for ``--seeds``."""
    cli.main({"fig11": fig11}, "experiments.r2sp_cluster.real.fig11", __doc__, argv)


if __name__ == "__main__":
    main()

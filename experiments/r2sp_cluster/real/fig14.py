"""Fig. 14 of the R²SP paper in small real CPU runs: injected delays, BSP, SAFA, R²SP + tuning.

The small transformer (copy task), 4 workers with injected delays 0.5, 0.5, 1, 1 s per
iteration, 1 PS unthrottled; target loss 2.1; normalised by BSP. Emulated dedicated devices
(``compute_model="emulated"``, see :mod:`experiments.r2sp_cluster.real.fig11`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.r2sp_cluster.real import cli
from experiments.r2sp_cluster.real.figures import plot_fig14
from experiments.r2sp_cluster.real.runs import (
    FIG14_DELAYS,
    FIG14_TIME_RATIO,
    collect,
    config,
    mean,
    means,
    norm_verdict,
    paired,
    ratio,
    write_records,
)
from experiments.r2sp_cluster.twin.setting import claim
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.schemes import scheme_params


def fig14_config(label: str, seed: int) -> ClusterConfig:
    """Fig. 14's run ``label`` (bsp, safa, r2sp+tuning): transformer, injected delays."""
    params = (
        scheme_params("r2sp", tuning="idle", t_seed="probe")
        if label == "r2sp+tuning"
        else scheme_params(label)
    )
    return config(
        workers=len(FIG14_DELAYS), servers=1, scheme=params, model="transformer",
        dataset="copy", batch_size=32, lr=0.04, max_iterations=50, loss_threshold=2.1,
        iteration_delays=FIG14_DELAYS, compute_model="emulated", seed=seed,
    )  # fmt: skip


def fig14(out: Path, seeds: Sequence[int], fresh: bool) -> dict[str, Any]:
    """BSP, SAFA and R²SP + tuning with injected delays: iteration time, iterations, time."""
    labels = ("bsp", "safa", "r2sp+tuning")
    recs = collect(out, "fig14", labels, seeds, fig14_config, fresh)
    table = [{"scheme": lab, **means(recs, lab, seeds),
              "iteration_norm": paired(recs, lab, "bsp", "iteration_s", seeds),
              "statistical_norm": paired(recs, lab, "bsp", "iterations_to_target", seeds),
              "overall_norm": paired(recs, lab, "bsp", "time_to_target_s", seeds),
              "discarded": mean([float(sum(len(d) for d in recs[(lab, s)]["summary"].get(
                  "discarded_updates", [[]])[:1])) for s in seeds])}
             for lab in labels]  # fmt: skip
    by = {r["scheme"]: r for r in table}
    r2 = by["r2sp+tuning"]
    others = [lab for lab in labels[:2] if by[lab]["time_to_target_s"] is not None]
    second = min(others, key=lambda lab: by[lab]["time_to_target_s"]) if others else None
    vs_second = None if second is None else mean(
        [ratio(recs[("r2sp+tuning", s)]["time_to_target_s"], recs[(second, s)]["time_to_target_s"])
         for s in seeds])  # fmt: skip
    r2.update(second_best=second, time_vs_second=vs_second, paper_time_vs_second=FIG14_TIME_RATIO,
              verdict_time=norm_verdict(vs_second, FIG14_TIME_RATIO, seeds))  # fmt: skip
    it = {lab: by[lab]["iterations_to_target"] for lab in labels}
    claims = {
        "R²SP + tuning has the best per-iteration time": claim(
            min(labels, key=lambda lab: by[lab]["iteration_s"]) == "r2sp+tuning"),
        "R²SP + tuning needs more iterations than BSP and SAFA": "n/a"
        if None in it.values() else claim(it["r2sp+tuning"] > max(it["bsp"], it["safa"])),
    }  # fmt: skip
    plot_fig14(out / "fig14" / "fig14.png", table, recs, seeds)
    return write_records(out, "fig14", recs, table, seeds, claims)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.r2sp_cluster.real.fig14``: this item alone for ``--seeds``."""
    cli.main({"fig14": fig14}, "experiments.r2sp_cluster.real.fig14", __doc__, argv)


if __name__ == "__main__":
    main()

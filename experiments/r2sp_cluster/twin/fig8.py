"""Fig. 8a of the R²SP paper on the twin: hardware efficiency on cluster A (16 workers, 4 PS).

Steady state: the first :data:`~experiments.r2sp_cluster.twin.setting.SKIP` iterations are
left out of every figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.r2sp_cluster.twin import cli
from experiments.r2sp_cluster.twin.setting import (
    FIG8_SPEEDUP,
    ITERATIONS,
    SCHEMES,
    SKIP,
    claim,
    cluster_a,
    figure,
    judge,
    link_bps,
    mean_of,
    run_seeds,
    save,
    write_item,
)

MODELS = ("resnet32", "alexnet", "vgg16")


def _profiles(model: str) -> tuple[str, ...]:
    same = link_bps(model, "table1") == link_bps(model, "nominal")
    return ("nominal",) if same else ("nominal", "table1")


def fig8(out: Path) -> dict[str, Any]:
    """Mean iteration time of BSP/ASP/SSP/R²SP normalised by BSP, per model and link profile."""
    runs: list[dict[str, Any]] = []
    for model in MODELS:
        for profile in _profiles(model):
            for scheme in SCHEMES:
                res = run_seeds(cluster_a(model, scheme, profile, ITERATIONS))
                it, it_sd = mean_of(res, lambda r: r.mean_iteration_time(SKIP))
                blk, _ = mean_of(res, lambda r: r.mean("blocking_s", SKIP))
                comm, _ = mean_of(res, lambda r: r.mean("pull_s", SKIP) + r.mean("push_s", SKIP))
                runs.append(
                    {
                        "model": model,
                        "profile": profile,
                        "scheme": scheme,
                        "iteration_s": it,
                        "iteration_sd": it_sd,
                        "blocking_s": blk,
                        "comm_s": comm,
                        "seeds": len(res),
                    }
                )
    for r in runs:
        bsp = next(
            x
            for x in runs
            if x["model"] == r["model"] and x["profile"] == r["profile"] and x["scheme"] == "bsp"
        )
        r["norm_vs_bsp"] = r["iteration_s"] / bsp["iteration_s"]
        r["speedup_vs_bsp"] = 1 - r["norm_vs_bsp"]
    table = []
    for model in MODELS:
        for profile in _profiles(model):
            rows = {r["scheme"]: r for r in runs if r["model"] == model and r["profile"] == profile}
            fastest = min(rows, key=lambda s: rows[s]["iteration_s"])
            speed = rows["r2sp"]["speedup_vs_bsp"]
            paper = FIG8_SPEEDUP.get(model, float("nan"))
            table.append(
                {
                    "model": model,
                    "profile": profile,
                    "asp_norm": rows["asp"]["norm_vs_bsp"],
                    "ssp_norm": rows["ssp"]["norm_vs_bsp"],
                    "r2sp_norm": rows["r2sp"]["norm_vs_bsp"],
                    "r2sp_speedup": speed,
                    "paper_speedup": paper,
                    "verdict_speedup": judge(speed, paper, "reduction"),
                    "claim_r2sp_fastest": claim(fastest == "r2sp"),
                    "claim_relaxed_faster": claim(
                        all(rows[s]["norm_vs_bsp"] < 1 for s in ("asp", "ssp", "r2sp"))
                    ),
                }
            )
    d = write_item(out, "fig8", runs, table)
    _plot_fig8(runs, d / "fig8.png")
    return {"item": "fig8", "table": table}


def _plot_fig8(runs: list[dict[str, Any]], path: Path) -> None:
    fig, ax = figure(path)
    keys = [(m, p) for m in MODELS for p in _profiles(m)]
    x = np.arange(len(keys))
    for i, scheme in enumerate(SCHEMES):
        v = [
            next(
                r["norm_vs_bsp"]
                for r in runs
                if (r["model"], r["profile"]) == k and r["scheme"] == scheme
            )
            for k in keys
        ]
        ax.bar(x + (i - 1.5) * 0.2, v, 0.2, label=scheme.upper().replace("R2SP", "R²SP"))
    ax.set_xticks(x, [f"{m}\n{p}" for m, p in keys], fontsize=8)
    ax.set_ylabel("mean iteration time / BSP's")
    ax.set_title("Fig. 8a on the twin: 16 workers, 4 PS (lower is better)")
    ax.legend(fontsize=8)
    save(fig, path)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.r2sp_cluster.twin.fig8``: this item, then the twin's REPORT.md."""
    cli.main({"fig8": fig8}, "experiments.r2sp_cluster.twin.fig8", __doc__, argv)


if __name__ == "__main__":
    main()

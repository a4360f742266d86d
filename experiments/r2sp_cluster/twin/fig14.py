"""Fig. 14a of the R²SP paper on the twin: injected delays, BSP/ASP/SSP/SAFA/R²SP (+ tuning).

8 workers, 2 PS, 100 Gbps links, a T5-small-sized model (60.5 M float32 parameters, 242 MB),
batch 400, compute 1.0 s per iteration at batch 400 on every worker (our assumption: the paper
gives no 2080Ti timings), injected per-iteration delays of 0.5 s on workers 4-5 and 1 s on
workers 6-7 (the paper's). The paper's "per-iteration time" is not defined further; we report
the mean iteration time (per worker, then averaged), the samples/s and the PS updates/s, each
normalised by BSP.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.r2sp_cluster.twin import cli
from experiments.r2sp_cluster.twin.setting import (
    JITTER_CV,
    MB,
    SKIP,
    claim,
    figure,
    mean_of,
    run_seeds,
    save,
    write_item,
)
from experiments.r2sp_cluster.twin.table3 import samples_per_s
from fl_r2sp.cluster.schemes import scheme_params
from fl_r2sp.cluster.sim import TwinSpec

FIG14_SCHEMES = (
    ("bsp", "none"),
    ("asp", "none"),
    ("ssp", "none"),
    ("safa", "none"),
    ("r2sp", "none"),
    ("r2sp", "idle"),
)


def transformer_spec(scheme: str, tuning: str, iterations: int = 80) -> TwinSpec:
    """Fig. 14's setup on the twin (see the module docstring)."""
    bw = 12500 * MB  # 100 Gbit/s
    knobs = {"tuning": tuning} if scheme == "r2sp" else {}  # only R²SP tunes batches
    return TwinSpec(
        params=scheme_params(scheme, **knobs),
        num_workers=8,
        num_servers=2,
        model_bytes=60.5e6 * 4,
        batch_size=400,
        iterations=iterations,
        speeds=(400.0,),
        server_bandwidth=bw,
        worker_bandwidth=bw,
        iteration_delays=(0, 0, 0, 0, 0.5, 0.5, 1.0, 1.0),
        jitter_cv=JITTER_CV,
    )


def fig14(out: Path) -> dict[str, Any]:
    """Iteration time, samples/s and updates/s per scheme, normalised by BSP."""
    runs: list[dict[str, Any]] = []
    for scheme, tuning in FIG14_SCHEMES:
        res = run_seeds(transformer_spec(scheme, tuning))
        it, _ = mean_of(res, lambda r: r.mean_iteration_time(SKIP))
        ups, _ = mean_of(res, lambda r: sum(r.throughput(SKIP).values()))
        runs.append(
            {
                "scheme": scheme + ("+tuning" if tuning != "none" else ""),
                "iteration_s": it,
                "samples_s": mean_of(res, samples_per_s)[0],
                "updates_s": ups,
                "discarded": mean_of(res, lambda r: float(len(r.discarded)))[0],
            }
        )
    bsp = runs[0]
    for r in runs:
        r["iteration_norm"] = r["iteration_s"] / bsp["iteration_s"]
        r["samples_norm"] = r["samples_s"] / bsp["samples_s"]
        r["updates_norm"] = r["updates_s"] / bsp["updates_s"]
    best_it = min(runs, key=lambda r: r["iteration_s"])["scheme"]
    best_sps = max(runs, key=lambda r: r["samples_s"])["scheme"]
    table = [{**r} for r in runs]
    table.append(
        {
            "scheme": "claim: R²SP+tuning best per-iteration",
            "by_iteration_time": f"{claim(best_it == 'r2sp+tuning')} (best: {best_it})",
            "by_samples_s": f"{claim(best_sps == 'r2sp+tuning')} (best: {best_sps})",
        }
    )
    d = write_item(out, "fig14", runs, table)
    fig, ax = figure(d / "fig14.png")
    x = np.arange(len(runs))
    ax.bar(x - 0.2, [r["iteration_norm"] for r in runs], 0.4, label="iteration time / BSP")
    ax.bar(x + 0.2, [r["samples_norm"] for r in runs], 0.4, label="samples/s / BSP")
    ax.set_xticks(x, [r["scheme"] for r in runs], fontsize=8)
    ax.set_title("Fig. 14a on the twin: 8 workers, delays 0.5 s x2, 1 s x2")
    ax.legend(fontsize=8)
    save(fig, d / "fig14.png")
    return {"item": "fig14", "table": table}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.r2sp_cluster.twin.fig14``: this item, then the twin's REPORT.md."""
    cli.main({"fig14": fig14}, "experiments.r2sp_cluster.twin.fig14", __doc__, argv)


if __name__ == "__main__":
    main()

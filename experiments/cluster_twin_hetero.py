"""Twin items on heterogeneous clusters: Table III (batch-size tuning), Fig. 14 (injected delays).

Table III: cluster B (8 workers: 2 g2.2x at 429, 2 p2.x at 628, 4 g3.4x at 917 samples/s; 2 PS;
ResNet32, 50 MB; batch 512; 10 Gbps links). R²SP without tuning gives each worker's blocking
time; the idle rule b + v·t_block on *our* measurements gives our tuned sizes; the same rule on
the *paper's* speeds and blocking times must give Table III exactly. Then R²SP with tuning: the
blocking left and the sample throughput (the twin's hardware-side view of Fig. 11, whose ~40%
is a convergence-time claim the twin cannot make).

Fig. 14: 8 workers, 2 PS, 100 Gbps links, a T5-small-sized model (60.5 M float32 parameters,
242 MB), batch 400, compute 1.0 s per iteration at batch 400 on every worker (our assumption: the
paper gives no 2080Ti timings), injected per-iteration delays of 0.5 s on workers 4-5 and 1 s
on workers 6-7 (the paper's). The paper's "per-iteration time" is not defined further; we report
the mean iteration time (per worker, then averaged), the samples/s and the PS updates/s, each
normalised by BSP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from experiments.cluster_twin_hw import SKIP
from experiments.cluster_twin_setup import (
    JITTER_CV,
    MB,
    NOMINAL_BPS,
    TABLE1,
    TABLE3,
    claim,
    figure,
    mean_of,
    run_seeds,
    save,
    verdict,
    write_item,
)
from fl_r2sp.cluster.policies.ps.tuning import idle_rule
from fl_r2sp.cluster.schemes import scheme_params as SchemeParams
from fl_r2sp.cluster.sim import TwinResult, TwinSpec

TYPES = [t for t, v in TABLE3.items() for _ in range(int(v["count"]))]


def cluster_b(tuning: str, iterations: int = 80) -> TwinSpec:
    """Cluster B running R²SP (r = 0.8) with the given tuning rule."""
    return TwinSpec(
        params=SchemeParams("r2sp", tuning=tuning),
        num_workers=8,
        num_servers=2,
        model_bytes=TABLE1["resnet32"]["bytes"],
        batch_size=512,
        iterations=iterations,
        speeds=tuple(TABLE3[t]["speed"] for t in TYPES),
        server_bandwidth=NOMINAL_BPS,
        worker_bandwidth=NOMINAL_BPS,
        jitter_cv=JITTER_CV,
    )


def samples_per_s(r: TwinResult) -> float:
    """Sum over workers of batch size / iteration time (steady state)."""
    cyc = r.cycles(SKIP)
    return float(sum(r.mean("batch_size", SKIP, worker=w) / c for w, c in cyc.items()))


def _per_type(res: list[TwinResult], column: str) -> dict[str, float]:
    out = {}
    for t in TABLE3:
        ws = [w for w, tt in enumerate(TYPES) if tt == t]
        out[t], _ = mean_of(
            res, lambda r, ws=ws: float(np.mean([r.mean(column, SKIP, w) for w in ws]))
        )
    return out


def table3(out: Path) -> dict[str, Any]:
    """Blocking without tuning, tuned sizes (ours and from the paper's inputs), tuned run."""
    plain, tuned = run_seeds(cluster_b("none")), run_seeds(cluster_b("idle"))
    block = _per_type(plain, "blocking_s")
    block_after = _per_type(tuned, "blocking_s")
    batch_after = _per_type(tuned, "batch_size")
    sps = {k: mean_of(v, samples_per_s)[0] for k, v in (("none", plain), ("idle", tuned))}
    runs, table = [], []
    for t, paper in TABLE3.items():
        ours_tuned = idle_rule(512, paper["speed"], block[t])
        exact = idle_rule(512, paper["speed"], paper["blocking_s"])
        runs.append(
            {
                "type": t,
                "speed": paper["speed"],
                "blocking_s": block[t],
                "tuned_from_our_blocking": ours_tuned,
                "tuned_in_run": batch_after[t],
                "blocking_after_tuning_s": block_after[t],
            }
        )
        table.append(
            {
                "type": t,
                "blocking_s": block[t],
                "paper_blocking_s": paper["blocking_s"],
                "verdict_blocking": verdict(block[t], paper["blocking_s"], 0.0)
                if paper["blocking_s"]
                else claim(block[t] < 0.05),
                "tuned_ours": ours_tuned,
                "tuned_in_run": batch_after[t],
                "paper_tuned": paper["tuned"],
                "verdict_tuned": verdict(float(ours_tuned), float(paper["tuned"]), 512.0),
                "rule_on_paper_inputs": exact,
                "exact": claim(exact == paper["tuned"]),
                "blocking_after_s": block_after[t],
            }
        )
    table.append(
        {
            "type": "all",
            "samples_s_no_tuning": sps["none"],
            "samples_s_tuning": sps["idle"],
            "gain": sps["idle"] / sps["none"] - 1,
        }
    )
    d = write_item(out, "table3", runs, table)
    _plot_table3(table, d / "table3.png")
    return {"item": "table3", "table": table}


def _plot_table3(table: list[dict[str, Any]], path: Path) -> None:
    fig, ax = figure(path)
    x = np.arange(len(TABLE3))
    ax.bar(x - 0.2, [r["tuned_ours"] for r in table[:3]], 0.4, label="twin (idle rule)")
    ax.bar(x + 0.2, [r["paper_tuned"] for r in table[:3]], 0.4, label="paper Table III")
    ax.set_xticks(x, list(TABLE3))
    ax.set_ylabel("tuned batch size")
    ax.set_title("Table III on the twin: cluster B, ResNet32, batch 512")
    ax.legend()
    save(fig, path)


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
    return TwinSpec(
        params=SchemeParams(scheme, tuning=tuning),
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
    runs = []
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

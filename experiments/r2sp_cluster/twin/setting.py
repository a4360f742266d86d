"""Shared setup of the cluster twin experiments: the paper's numbers, our assumptions, verdicts.

These are **virtual-time twin** results (:mod:`fl_r2sp.cluster.sim`): hardware efficiency only
(iteration time, blocking, inter-update gaps). Statistical efficiency needs real training (the
cluster runtime's real runs); nothing here trains a model.

Assumptions (not tuned toward any result figure):

* **Model sizes**: Table I of the INFOCOM paper (ResNet32 50 MB, AlexNet 240 MB, VGG16 552 MB;
  MB = 10^6 bytes). The 50 MB of ResNet32 is what the paper prints, although a 0.46 M-parameter
  ResNet32 is 1.9 MB of float32; we use the printed size.
* **Compute per iteration** at batch 128 on a g3.4xlarge (Tesla M60): Table I's iteration time
  minus its communication-blocking time (ResNet32 0.12 s, AlexNet 0.50 s, VGG16 0.70 s), i.e.
  speed = 128 / that samples/s. Compute jitter: a log-normal factor with CV 0.05 (our choice;
  the paper gives none), 3 seeds.
* **Links**, two profiles, PS shard links and worker links alike (all instances have 10 Gbps
  NICs), each direction separately (full duplex):
  ``nominal``: 10 Gbps = 1250 MB/s; ``table1``: the effective rate that makes a fluid BSP
  reproduce Table I's communication-blocking time (2 PS, 8 workers: pull + push =
  2·N·M/(S·B), so B = 2·8·M/(2·t_comm)): VGG16 488 MB/s, AlexNet 664 MB/s; ResNet32's
  would exceed 10 Gbps (3636 MB/s: its 0.11 s is not bandwidth-bound), so it stays at nominal.
  Table I is a different measurement (BSP, 8 workers, 2 PS) than the figures we compare with.
* No per-transfer latency; control messages are instantaneous.

Verdict rule (:func:`judge`): the report's (:mod:`experiments.common.verdicts`). A value the
paper prints is "reproduced" when ours/paper lies in [2/3, 3/2], else "not reproduced"; a
reduction (a speed-up read as the time it saves, a time normalised by its baseline read as one
minus it) is "reproduced" with the paper's sign and ours/paper's in the same band, "same
direction" with the sign outside it, else "not reproduced". Claims without numbers are "holds"
or "does not hold" by the stated test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import verdicts
from experiments.common.markdown_cells import short
from experiments.common.run_cache import mean_std, write_csv, write_json
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.schemes import scheme_params
from fl_r2sp.cluster.sim import TwinResult, TwinSpec, simulate

MB = 1e6
#: Table I (INFOCOM'19): parameter size (bytes), iteration time and comm-blocking time (s).
TABLE1 = {
    "resnet32": {"bytes": 50 * MB, "iteration_s": 0.23, "comm_s": 0.11},
    "alexnet": {"bytes": 240 * MB, "iteration_s": 3.39, "comm_s": 2.89},
    "vgg16": {"bytes": 552 * MB, "iteration_s": 9.74, "comm_s": 9.04},
}
NOMINAL_BPS = 1250 * MB  # 10 Gbit/s
BATCH = 128
JITTER_CV = 0.05
SEEDS = (0, 1, 2)
#: Steady state: the first SKIP iterations are left out of every figure (every scheme starts all
#: workers at once; R²SP's EMA of T, weight 0.1, needs ~20 iterations to forget that contended
#: first iteration).
SKIP = 20
#: Iterations of a cluster A run, and the schemes of Figs. 8 and 9.
ITERATIONS = 80
SCHEMES = ("bsp", "asp", "ssp", "r2sp")
#: Fig. 8a: R²SP's iteration speed-up over BSP, "around 30%" for AlexNet and VGG16.
FIG8_SPEEDUP = {"alexnet": 0.30, "vgg16": 0.30}
#: Fig. 9 (VGG16, cluster A): fraction of zero inter-update gaps.
FIG9_ZERO = {"bsp": 15 / 16, "asp": 0.75, "ssp": 0.83}
#: Table III (cluster B, ResNet32, batch 512): speed, blocking w/o tuning, tuned batch.
TABLE3 = {
    "g2.2x": {"speed": 429.0, "blocking_s": 0.0, "tuned": 512, "count": 2},
    "p2.x": {"speed": 628.0, "blocking_s": 0.62, "tuned": 901, "count": 2},
    "g3.4x": {"speed": 917.0, "blocking_s": 0.82, "tuned": 1264, "count": 4},
}
FIG13_BEST_R = 0.8
#: Ours / paper within this band counts as "reproduced" (the cluster items' verdict rule).
BAND = (0.8, 1.25)


def compute_s(model: str) -> float:
    """Per-iteration compute time at batch 128 (Table I: iteration minus comm-blocking)."""
    t = TABLE1[model]
    return t["iteration_s"] - t["comm_s"]


def link_bps(model: str, profile: str) -> float:
    """Bytes/s of every link under ``profile`` ("nominal" or "table1")."""
    if profile == "nominal":
        return NOMINAL_BPS
    t = TABLE1[model]
    effective = 2 * 8 * t["bytes"] / (2 * t["comm_s"])
    return min(effective, NOMINAL_BPS)


def cluster_a(
    model: str,
    scheme: str | PSParams,
    profile: str = "table1",
    iterations: int = 60,
    seed: int = 0,
    bandwidth_scale: float = 1.0,
    jitter_cv: float = JITTER_CV,
) -> TwinSpec:
    """Cluster A: 16 homogeneous workers, 4 PS (Figs. 8, 9, 12, 13)."""
    params = scheme_params(scheme) if isinstance(scheme, str) else scheme
    bw = link_bps(model, profile) * bandwidth_scale
    return TwinSpec(
        params=params,
        num_workers=16,
        num_servers=4,
        model_bytes=TABLE1[model]["bytes"],
        batch_size=BATCH,
        iterations=iterations,
        speeds=(BATCH / compute_s(model),),
        server_bandwidth=bw,
        worker_bandwidth=bw,
        jitter_cv=jitter_cv,
        seed=seed,
    )


def run_seeds(spec: TwinSpec, seeds: Sequence[int] = SEEDS) -> list[TwinResult]:
    """The same spec under several jitter seeds (one run if there is no jitter)."""
    if spec.jitter_cv == 0:
        return [simulate(spec)]
    return [simulate(replace(spec, seed=s)) for s in seeds]


def mean_of(results: Sequence[TwinResult], fn: Any) -> tuple[float, float]:
    """Mean and std over runs of ``fn(result)``."""
    m, s, _ = mean_std(fn(r) for r in results)
    return (math.nan if m is None else m), (0.0 if s is None else s)


def verdict(ours: float, paper: float, baseline: float | None = None) -> str:
    """Our rule: ratio in [0.8, 1.25] reproduced; same side of ``baseline``; else differs."""
    if not (math.isfinite(ours) and math.isfinite(paper)):
        return "n/a"
    if paper != 0 and BAND[0] <= ours / paper <= BAND[1]:
        return "reproduced"
    if baseline is not None and np.sign(ours - baseline) == np.sign(paper - baseline) != 0:
        return "same direction"
    return "differs"


#: How :func:`judge` reads a number against the paper's: a value, a reduction, or a time
#: normalised by its baseline (the reduction one minus it).
READINGS = ("value", "reduction", "norm")


def judge(
    ours: float | None, paper: float | None, reading: str = "value", seeds: int | None = None
) -> str:
    """Verdict words (no emphasis) for ``ours`` against ``paper`` by the report's rules.

    Parameters
    ----------
    ours, paper
        Our number and the paper's; ``n/a`` when either is missing or not finite, or the
        paper's value (or reduction) is zero.
    reading : str, default "value"
        One of :data:`READINGS`: ``value`` (:func:`experiments.common.verdicts.label` of
        ours / paper), ``reduction`` (:func:`~experiments.common.verdicts.reduction_label`) or
        ``norm`` (a reduction of one minus each).
    seeds : int or None, default None
        Seeds behind ``ours``; one seed is stated in the words.
    """
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; choose one of {READINGS}")
    if ours is None or paper is None or not (math.isfinite(ours) and math.isfinite(paper)):
        return "n/a"
    if reading == "value":
        return "n/a" if paper == 0 else verdicts.plain(verdicts.label(ours / paper, seeds=seeds))
    if reading == "norm":  # a normalised time stands for the reduction one minus it
        ours, paper = 1 - ours, 1 - paper
    return verdicts.plain(verdicts.reduction_label(ours, paper, seeds=seeds))


def claim(holds: bool) -> str:
    """Verdict of a claim without numbers."""
    return "holds" if holds else "does not hold"


def write_item(
    out: Path, item: str, runs: Sequence[Mapping[str, Any]], table: Sequence[Mapping[str, Any]]
) -> Path:
    """``<out>/<item>/{runs.csv,summary.csv,summary.json}``; print the summary; return the dir."""
    d = out / item
    write_csv(d / "runs.csv", runs)
    write_csv(d / "summary.csv", table)
    write_json(d / "summary.json", {"item": item, "table": list(table)})
    print(f"== {item} (virtual-time twin; hardware efficiency only)")
    for row in table:
        print("  " + " | ".join(f"{k}={short(v)}" for k, v in row.items()))
    return d


def md_table(table: Sequence[Mapping[str, Any]]) -> str:
    """A markdown table of summary rows."""
    if not table:
        return ""
    keys = list(table[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(short(r.get(k, "")) for k in keys) + " |" for r in table]
    return "\n".join(lines)


def figure(path: Path) -> tuple[Any, Any]:
    """A new matplotlib figure (Agg backend) and its axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    path.parent.mkdir(parents=True, exist_ok=True)
    return fig, ax


def save(fig: Any, path: Path) -> Path:
    """Save and close a figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

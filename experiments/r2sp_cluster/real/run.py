"""Cluster mode, small real runs on CPU: Figs. 8, 11 and 14 of the R²SP paper in miniature.

Real training through the cluster runtime (``fl_r2sp.cluster.runtime.local.run_local``: every
rank a process of this machine, gloo on loopback), so statistical efficiency (iterations to a
loss target) and overall efficiency (time to it) are measured, not modelled. Sizes are the
CPU's, not the paper's (the twin, ``python -m experiments.r2sp_cluster.twin.run``, covers the
paper's sizes for hardware efficiency only); the setup and the verdict rule are in
:mod:`experiments.r2sp_cluster.real.runs`.

* ``fig8``: BSP, ASP, SSP, R²SP on ``mlp-wide`` (4.9 MB of parameters, little compute: the
  network-bound regime of the paper's AlexNet/VGG16), 4 workers, 1 PS whose ingress and egress
  are each throttled to 20 MB/s; target loss 1.0; normalised by BSP.
* ``fig11``: R²SP without and with batch tuning (idle rule) on ResNet-32 / CIFAR-10 (first
  10,000 training images, batch 16), 4 workers with the compute multipliers of cluster B's
  speeds (g2.2x, p2.x, g3.4x, g3.4x: 2.14, 1.46, 1, 1), 1 PS unthrottled; target loss 2.2.
* ``fig14``: BSP, SAFA and R²SP + tuning on the small transformer (copy task), 4 workers with
  injected delays 0.5, 0.5, 1, 1 s per iteration, 1 PS unthrottled; target loss 2.1.

Learning rates: the same for every scheme of an item. BSP applies the mean of the N gradients
of an iteration, the other schemes each push at once, so per iteration they take N steps of
that size (more with tuning's linear scaling); the rates are the largest that kept every
scheme finite in trial runs (lr 0.1 made SAFA and R²SP + tuning diverge on the transformer).

    python -m experiments.r2sp_cluster.real.run              # all, 2 seeds, ~20 min on 2 cores
    python -m experiments.r2sp_cluster.real.run --only fig14 --seeds 0
    python -m experiments.r2sp_cluster.real.run --publish experiments/report/cluster_real

Runs are cached under ``<out>/cluster_real/_runs/`` by configuration, so a rerun only redoes
what changed (``--fresh`` reruns everything); each item writes ``runs.csv``, ``summary.csv``,
``summary.json`` and a figure to ``<out>/cluster_real/<item>/``; ``--publish`` copies them to
the folder that ``python -m experiments.report`` reads.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments.r2sp_cluster.real.fig8 import fig8
from experiments.r2sp_cluster.real.fig11 import fig11
from experiments.r2sp_cluster.real.fig14 import fig14
from experiments.r2sp_cluster.real.runs import (
    publish,
)

ITEMS: dict[str, Callable[[Path, Sequence[int], bool], dict[str, Any]]] = {
    "fig8": fig8, "fig11": fig11, "fig14": fig14,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.r2sp_cluster.real.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", default="", help=f"comma-separated subset of {list(ITEMS)}")
    parser.add_argument("--seeds", default="0,1", help="comma-separated seeds [0,1]")
    parser.add_argument("--out", default="experiments/results", help="results root")
    parser.add_argument("--publish", default="", help="also copy the item files here")
    parser.add_argument("--fresh", action="store_true", help="rerun cached runs")
    ns = parser.parse_args(argv)
    only = [x.strip() for x in ns.only.split(",") if x.strip()] or list(ITEMS)
    if unknown := sorted(set(only) - set(ITEMS)):
        parser.error(f"unknown items {unknown}; choose from {list(ITEMS)}")
    seeds = [int(s) for s in ns.seeds.split(",") if s.strip()]
    out = Path(ns.out) / "cluster_real"
    for item in only:
        ITEMS[item](out, seeds, ns.fresh)
    if ns.publish:
        publish(out, Path(ns.publish), only)


if __name__ == "__main__":
    main()

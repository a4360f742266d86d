"""Cluster mode, small real runs on CPU: Figs. 8, 11 and 14 of the R²SP paper in miniature.

Real training through the cluster runtime (``fl_r2sp.cluster.local.run_local``: every
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

Every item emulates dedicated devices (``compute_model="emulated"``,
:mod:`fl_r2sp.cluster.runtime.ps.compute_model`) and seeds R²SP's T by one uncontended probe.

Learning rates: the same for every scheme of an item. BSP applies the mean of the N gradients
of an iteration, the other schemes each push at once, so per iteration they take N steps of
that size (more with tuning's linear scaling); the rates are the largest that kept every
scheme finite in trial runs (lr 0.1 made SAFA and R²SP + tuning diverge on the transformer).

    python -m experiments.r2sp_cluster.real.run              # all, 3 seeds
    python -m experiments.r2sp_cluster.real.run --only fig14 --seeds 0
    python -m experiments.r2sp_cluster.real.run --publish records/report/cluster_real

One item alone: ``python -m experiments.r2sp_cluster.real.<item>`` (e.g. ``fig11``). The run
cache, outputs and ``--publish``: :mod:`experiments.r2sp_cluster.real.cli`.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.r2sp_cluster.real import cli
from experiments.r2sp_cluster.real.fig8 import fig8
from experiments.r2sp_cluster.real.fig11 import fig11
from experiments.r2sp_cluster.real.fig14 import fig14

ITEMS: dict[str, cli.RealItem] = {"fig8": fig8, "fig11": fig11, "fig14": fig14}


def main(argv: Sequence[str] | None = None) -> None:
    """Run every item (or ``--only`` some) for ``--seeds``."""
    cli.main(ITEMS, "experiments.r2sp_cluster.real.run", __doc__, argv)


if __name__ == "__main__":
    main()

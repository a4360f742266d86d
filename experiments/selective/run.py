"""Selective reduce (BAG + BPAWR) vs partial reduce vs all reduce: the paper's simulations.

Reproduces Figs. 5–6 (vs n), 7 (wasted wait), 8 (p/n), 9 (η), 10 (θ), 13 (λ) and 14 (α) of
"Progress and Bandwidth Aware Partial Model Synchronization With Selective Reduce" with the
virtual-time simulator :mod:`fl_r2sp.cluster.sim.reduce.engine` (min / median / max over 20 trials;
setup, our choices and the verdict rules in :mod:`experiments.selective.trials`), plus one
item of ours (``compute``: the ratios when compute takes 1x, 3x, 10x longer).

    python -m experiments.selective.run                                  # everything, ~15 min
    python -m experiments.selective.run --only fig8 --trials 5
    python -m experiments.selective.run --publish records/report/selective

One item alone: ``python -m experiments.selective.<item>`` (e.g. ``fig8``). Outputs, the trial
cache and ``--publish``: :mod:`experiments.selective.cli`.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.selective import cli
from experiments.selective.compute import compute
from experiments.selective.fig5_6 import fig5_6
from experiments.selective.fig7 import fig7
from experiments.selective.fig8 import fig8
from experiments.selective.fig9 import fig9
from experiments.selective.fig10 import fig10
from experiments.selective.fig13 import fig13
from experiments.selective.fig14 import fig14

#: Every item, in :data:`~experiments.selective.cli.TITLES`' order.
ITEMS: dict[str, cli.SelectiveItem] = {
    "fig5_6": fig5_6, "fig7": fig7, "fig8": fig8, "fig9": fig9, "fig10": fig10, "fig13": fig13,
    "fig14": fig14, "compute": compute,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    """Run every item (or ``--only`` some), then write their REPORT.md."""
    cli.main(ITEMS, "experiments.selective.run", __doc__, argv)


if __name__ == "__main__":
    main()

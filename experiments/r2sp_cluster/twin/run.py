"""Cluster mode on the virtual-time twin: the R²SP paper's cluster figures at paper size.

Runs the same coordinator policies as the real runtime over a fluid network in virtual time
(:mod:`fl_r2sp.cluster.sim`): 16 workers and 4 PS (cluster A), 8 workers and 2 PS (cluster B and
the transformer setup), Table I model sizes. **Hardware efficiency only** (iteration time,
blocking, inter-update gaps, throughput): nothing is trained, so statistical and overall
efficiency (Fig. 8b/c, Fig. 11's convergence, Fig. 14b/c) come from the real runs, not from
here. Assumptions and the verdict rule: :mod:`experiments.r2sp_cluster.twin.setting`.

    python -m experiments.r2sp_cluster.twin.run                      # every item, ~3 CPU-minutes
    python -m experiments.r2sp_cluster.twin.run --only fig8,table3 \
        --publish records/report/cluster_twin

One item alone: ``python -m experiments.r2sp_cluster.twin.<item>`` (e.g. ``table3``). Outputs,
the report and ``--publish``: :mod:`experiments.r2sp_cluster.twin.cli`.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.r2sp_cluster.twin import cli
from experiments.r2sp_cluster.twin.fig8 import fig8
from experiments.r2sp_cluster.twin.fig9 import fig9
from experiments.r2sp_cluster.twin.fig12 import fig12
from experiments.r2sp_cluster.twin.fig13 import fig13
from experiments.r2sp_cluster.twin.fig14 import fig14
from experiments.r2sp_cluster.twin.table3 import table3

#: Every item, in :data:`~experiments.r2sp_cluster.twin.cli.TITLES`' order.
ITEMS: dict[str, cli.TwinItem] = {
    "fig8": fig8, "fig9": fig9, "fig12": fig12, "fig13": fig13, "table3": table3, "fig14": fig14,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    """Run every item (or ``--only`` some), then write the twin's REPORT.md."""
    cli.main(ITEMS, "experiments.r2sp_cluster.twin.run", __doc__, argv)


if __name__ == "__main__":
    main()

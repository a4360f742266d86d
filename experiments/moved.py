"""Commands of the flat ``experiments/`` layout, run under their new module names (opt-in).

``experiments/`` was one flat folder until the experiments were grouped by study. A command
users typed then (``python -m experiments.table4 ...``) is now run as
``python -m experiments.moved table4 ...``: the old name in :data:`MOVED` is looked up, the new
name printed on stderr, and the new module run as ``__main__`` with the remaining arguments (no
copy of any code, and no import hook: importing :mod:`experiments` changes nothing).
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

#: Old command module (under ``experiments.``) -> its new module.
MOVED: dict[str, str] = {
    "table2": "flr2sp.table2",
    "table4": "flr2sp.table4",
    "table5": "flr2sp.table5",
    "fig15": "flr2sp.fig15",
    "fig16": "flr2sp.fig16",
    "fig17": "flr2sp.fig17",
    "fig18": "flr2sp.fig18",
    "c_sweep": "flr2sp.c_sweep",
    "outliers": "flr2sp.outliers",
    "outliers_scoring": "flr2sp.outliers_scoring",
    "paper_scale": "flr2sp.paper_scale",
    "robustness": "flr2sp.robustness",
    "run_parallel": "flr2sp.run_parallel",
    "plots": "flr2sp.plots",
    "executor_figures": "flr2sp.executor_figures",
    "cluster_twin": "r2sp_cluster.twin.run",
    "cluster_real": "r2sp_cluster.real.run",
    "reduce_runtime": "selective.real",
    "dssync_twin": "dssync.twin",
    "dssync_real": "dssync.real",
    "osp_real": "osp.real",
}


def main(argv: Sequence[str] | None = None) -> None:
    """Run the old command ``argv[0]`` (a key of :data:`MOVED`) with the rest of ``argv``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in MOVED:
        names = ", ".join(sorted(MOVED))
        sys.exit(
            f"usage: python -m experiments.moved OLD_NAME [ARGS...]; OLD_NAME is one of {names}"
        )
    new = f"experiments.{MOVED[args[0]]}"
    print(f"experiments.{args[0]} is now {new}", file=sys.stderr)
    sys.argv = [new, *args[1:]]
    runpy.run_module(new, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

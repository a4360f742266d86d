"""Commands of the flat ``experiments/`` layout, run under their new module names.

``experiments/`` was one flat folder until the experiments were grouped by study; the commands
users typed then (``python -m experiments.table4 ...``) keep working: :class:`MovedFinder`
resolves an old name in :data:`MOVED` to the new module's file, prints the new name on stderr
and runs that file unchanged (no copy of any code).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

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
    "previous_report": "flr2sp.previous_report",
    "executor_figures": "flr2sp.executor_figures",
    "cluster_twin": "r2sp_cluster.twin.run",
    "cluster_real": "r2sp_cluster.real.run",
    "reduce_runtime": "selective.real",
    "dssync_twin": "dssync.twin",
    "dssync_real": "dssync.real",
    "osp_real": "osp.real",
}


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds ``experiments.<old>`` of :data:`MOVED` at its new module's file."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, old = fullname.partition(".")
        new = MOVED.get(old) if package == "experiments" else None
        if new is None:
            return None
        spec = importlib.util.find_spec(f"experiments.{new}")
        if spec is None or spec.origin is None:
            return None
        print(f"{fullname} is now experiments.{new}", file=sys.stderr)
        return importlib.util.spec_from_file_location(fullname, spec.origin)


def install() -> None:
    """Put one :class:`MovedFinder` in front of the import system (idempotent)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())

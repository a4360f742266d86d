"""The command of the real runs' items: run some of them (cached by configuration), publish.

Each item module (``python -m experiments.r2sp_cluster.real.fig11``) and the runner of all items
(:mod:`experiments.r2sp_cluster.real.run`) call :func:`main` with the items they hold. This
module imports no item, so that the items can import it.

Runs are cached under ``<out>/cluster_real/_runs/`` by configuration, so a rerun only redoes
what changed (``--fresh`` reruns everything); each item writes ``runs.csv``, ``summary.csv``,
``summary.json`` and a figure to ``<out>/cluster_real/<item>/``; ``--publish`` copies them to
the folder that ``python -m experiments.report`` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.common.item_commands import chosen_items, item_parser
from experiments.r2sp_cluster.real.runs import publish

#: An item: it runs (or loads) its runs for the seeds, writes ``<out>/<item>/``, returns a summary.
RealItem = Callable[[Path, Sequence[int], bool], dict[str, Any]]


def main(
    items: Mapping[str, RealItem], module: str, doc: str | None, argv: Sequence[str] | None = None
) -> None:
    """Run the chosen ``items`` for every seed of ``--seeds``; ``--publish`` copies their files.

    Parameters
    ----------
    items
        Item functions by name.
    module, doc
        Usage line and description of ``--help``.
    argv
        Command-line arguments, default ``None`` (``sys.argv``): ``--seeds`` (default ``0,1,2``),
        ``--out``, ``--publish``, ``--fresh``, and ``--only`` for several items.
    """
    parser = item_parser(module, doc, items)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds [0,1,2]")
    parser.add_argument("--fresh", action="store_true", help="rerun cached runs")
    ns = parser.parse_args(argv)
    only = chosen_items(parser, ns, items)
    seeds = [int(s) for s in ns.seeds.split(",") if s.strip()]
    out = Path(ns.out) / "cluster_real"
    for item in only:
        items[item](out, seeds, ns.fresh)
    if ns.publish:
        publish(out, Path(ns.publish), only)

"""The flags every cluster study's command shares: which items to run, where results go.

A cluster study (R²SP twin and real runs, selective reduce) has one command per item
(``python -m experiments.selective.fig8``) and one runner of all its items
(``python -m experiments.selective.run``); both build their parser here, and only the runner,
which holds several items, gets ``--only``.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection


def item_parser(module: str, doc: str | None, items: Collection[str]) -> argparse.ArgumentParser:
    """The parser of ``python -m <module>``: ``--only`` (several items), ``--out``, ``--publish``.

    Parameters
    ----------
    module
        The command's module, shown in its usage line.
    doc
        The description ``--help`` prints (the module's docstring, layout kept).
    items
        The items the command can run; ``--only`` (default: all of them) is added when there are
        more than one.
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if len(items) > 1:
        parser.add_argument("--only", default="", help=f"comma-separated subset of {list(items)}")
    parser.add_argument("--out", default="records/results", help="results root")
    parser.add_argument("--publish", default="", help="also copy the item files here")
    return parser


def chosen_items(
    parser: argparse.ArgumentParser, ns: argparse.Namespace, items: Collection[str]
) -> list[str]:
    """The items ``--only`` names (every item when it is empty or absent); an unknown one exits."""
    only = [x.strip() for x in getattr(ns, "only", "").split(",") if x.strip()] or list(items)
    if unknown := sorted(set(only) - set(items)):
        parser.error(f"unknown items {unknown}; choose from {list(items)}")
    return only

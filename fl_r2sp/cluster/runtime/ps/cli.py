"""Command-line flags shared by the parameter-server schemes (``--servers``, ``--momentum``, ...).

A PS scheme's own knobs are its record's flags (:meth:`PSParams.add_flags`, e.g. R²SP's
``--worker-gap-factor``); the scheme table (:mod:`fl_r2sp.cluster.schemes`) lists both in the same
help group. The run config of a PS scheme is the shared :class:`ClusterConfig` itself, so
:func:`build` returns the base config the CLI built.
"""

from __future__ import annotations

import argparse

from fl_r2sp.cluster.config import ClusterConfig


def add_flags(g: argparse._ArgumentGroup) -> None:
    """Add the flags every parameter-server scheme reads; defaults are :class:`ClusterConfig`'s."""
    d, a = ClusterConfig(), g.add_argument
    a("--servers", type=int, default=d.servers, help=f"S parameter servers [{d.servers}]")
    a("--momentum", type=float, default=d.momentum, help=f"PS momentum [{d.momentum}]")
    a("--server-bandwidth", type=float, default=d.server_bandwidth_mb_s,
      help="cap on each PS's ingress and egress, MB/s (0 = unlimited) [0]")  # fmt: skip
    a("--eval-samples", type=int, default=d.eval_samples,
      help=f"test examples evaluated at the end (0 = none) [{d.eval_samples}]")  # fmt: skip
    a("--progress", type=float, default=d.progress_s,
      help=f"seconds between progress lines (0 = quiet) [{d.progress_s:.0f}]")  # fmt: skip


def build(ns: argparse.Namespace, base: ClusterConfig, given: frozenset[str]) -> ClusterConfig:
    """A PS run is its base config (the CLI already put the scheme's record in it)."""
    return base


def describe(cfg: ClusterConfig) -> str:
    """One line naming the run: scheme, servers, workers, model, iterations."""
    return (f"{cfg.scheme_name}: {cfg.servers} PS + {cfg.workers} workers, {cfg.model} on "
            f"{cfg.dataset}, {cfg.max_iterations} iterations per worker")  # fmt: skip

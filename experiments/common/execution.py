"""How the experiments' runs are computed: the executor flags (not part of a run's key).

``--executor``, ``--compute-device`` and ``--executor-workers`` set the run-config keys of
the same names. They say *how* a run is computed, not *what*: the executors give the serial
results bit for bit (processes) or within float tolerance (batched; README, "Computing many
clients at once"). So a cached run is reused whichever executor computed it, and its record
keeps the executor and device in ``config``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

#: Run-config keys (kebab case) that say how a run is computed.
KEYS = ("executor", "compute-device", "executor-workers", "executor-stack")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """``--executor``, ``--compute-device``, ``--executor-workers`` (defaults: the run
    config's, overridable by ``$FL_R2SP_EXECUTOR`` / ``$FL_R2SP_COMPUTE_DEVICE``)."""
    parser.add_argument(
        "--executor",
        choices=("serial", "processes", "batched"),
        default=os.environ.get("FL_R2SP_EXECUTOR") or None,
        help="how client jobs are computed (default: the run config's, serial)",
    )
    parser.add_argument(
        "--compute-device",
        choices=("auto", "cpu", "cuda"),
        default=os.environ.get("FL_R2SP_COMPUTE_DEVICE") or None,
        help="where executor=batched trains (default: the run config's, auto)",
    )
    parser.add_argument(
        "--executor-workers", type=int, default=None, help="worker processes (0 = per core)"
    )


def picked(ns: argparse.Namespace) -> tuple[tuple[str, Any], ...]:
    picked = (
        ("executor", ns.executor),
        ("compute_device", ns.compute_device),
        ("executor_workers", ns.executor_workers),
    )
    return tuple((k, v) for k, v in picked if v is not None)

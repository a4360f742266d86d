"""How the experiments' runs are computed: the executor flags (not part of a run's key).

``--executor``, ``--compute-device``, ``--executor-workers`` and the batched executor's kernel
choices (``--executor-conv``, ``--executor-compile``, ``--executor-cuda-graphs``) set the
run-config keys of the same names. They say *how* a run is computed, not *what*: the
executors give the serial results bit for bit (processes) or within float tolerance (batched;
README, "Computing many clients at once"). So a cached run is reused whichever executor
computed it, and its record keeps the executor and device in ``config``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, get_args

from fl_r2sp.fl.config import StackCompile, StackConv

#: Run-config keys (kebab case) that say how a run is computed.
KEYS = (
    "executor",
    "compute-device",
    "executor-workers",
    "executor-stack",
    "executor-conv",
    "executor-compile",
    "executor-cuda-graphs",
)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """``--executor``, ``--compute-device``, ``--executor-workers`` and the kernel flags
    ``--executor-conv``, ``--executor-compile``, ``--executor-cuda-graphs`` (defaults: the run
    config's; the first two overridable by ``$FL_R2SP_EXECUTOR`` / ``$FL_R2SP_COMPUTE_DEVICE``)."""
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
    parser.add_argument(
        "--executor-conv",
        choices=get_args(StackConv),
        default=None,
        help="batched: convolution kernel (default: the run config's, grouped)",
    )
    parser.add_argument(
        "--executor-compile",
        choices=get_args(StackCompile),
        default=None,
        help="batched: torch.compile mode of the step (default: the run config's, off)",
    )
    parser.add_argument(
        "--executor-cuda-graphs",
        action="store_true",
        default=None,
        help="batched on CUDA: replay each stack's step from one CUDA graph (default: off)",
    )


def picked(ns: argparse.Namespace) -> tuple[tuple[str, Any], ...]:
    """The execution flags given on the command line, as (RunConfig field, value) pairs."""
    picked = (
        ("executor", ns.executor),
        ("compute_device", ns.compute_device),
        ("executor_workers", ns.executor_workers),
        ("executor_conv", ns.executor_conv),
        ("executor_compile", ns.executor_compile),
        ("executor_cuda_graphs", ns.executor_cuda_graphs),
    )
    return tuple((k, v) for k, v in picked if v is not None)

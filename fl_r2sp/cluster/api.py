"""The Python API of the cluster mode: train your own model with any scheme.

Two entry points, with the command line's knobs (each knob is the flag's name with ``_`` for
``-``: ``batch_size`` is ``--batch-size``; one definition of each, the parser's):

* :func:`train` runs every rank on this machine, supervised (as ``python -m fl_r2sp.cluster``
  does: that command is :func:`run` after parsing its flags), and returns a
  :class:`TrainResult`: the run summary, the run folder and the trained weights as a
  ``state_dict`` that loads into the user's module.
* :func:`run_worker` is the worker-side entry of a user's own script under ``torchrun``
  across machines: every process calls it with the same arguments, rank 0 gets the result.

The model, dataset, loss and evaluation are factories (module-level functions, or their
import paths ``"package.module:function"``); their contract is :mod:`fl_r2sp.cluster.userjob`.

Example
-------
::

    import fl_r2sp.cluster as cluster

    result = cluster.train(model="job:resnet18", dataset="job:cifar10", scheme="r2sp",
                           workers=4, servers=1, iterations=50, batch_size=64)
    net = resnet18(num_classes=10)
    net.load_state_dict(result.state_dict)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fl_r2sp.cluster.runtime.common.run_config import ClusterRunConfig
from fl_r2sp.importpath import path_of

__all__ = ["TrainResult", "make_config", "run", "run_worker", "train"]

#: A factory given as a callable or as its import path.
Factory = Callable[..., Any] | str
#: The knobs that name the job; the others are the command line's flags.
JOB_KNOBS = ("model", "dataset", "loss", "evaluate")


@dataclass(frozen=True)
class TrainResult:
    """What a run returns: its summary, its folder, and its final weights.

    Attributes
    ----------
    summary : dict
        The run summary (``summary.json``).
    run_dir : Path
        The run folder (telemetry, ``config.json``, ``final_params.pt``, plots).
    """

    summary: dict[str, Any]
    run_dir: Path

    @property
    def state_dict(self) -> dict[str, Any]:
        """The final weights as the user's module's ``state_dict`` (read from the run folder's
        ``final_params.pt``, key ``state_dict``; buffers such as BatchNorm statistics are the
        initial ones, since schemes synchronise the trainable parameters only)."""
        import torch

        saved = torch.load(self.run_dir / "final_params.pt", weights_only=True)
        return dict(saved["state_dict"])


def _as_path(value: Factory | None, what: str) -> str:
    if value is None or value == "":
        return ""
    return value if isinstance(value, str) else path_of(value, what)


def make_config(
    model: Factory,
    dataset: Factory,
    *,
    scheme: str = "r2sp",
    loss: Factory | None = None,
    evaluate: Factory | None = None,
    **knobs: Any,
) -> tuple[ClusterRunConfig, argparse.Namespace]:
    """The validated run config from the job and the command line's knobs.

    Parameters
    ----------
    model, dataset : callable or str
        Factories, or their import paths (or the built-in names, e.g. "mlp", "synthetic").
    scheme : str, default "r2sp"
        Any ``--scheme`` value.
    loss, evaluate : callable or str or None, default None
        Optional loss and evaluation (defaults: cross-entropy; the built-in test accuracy for
        a built-in dataset, none otherwise).
    **knobs
        Any other flag of ``python -m fl_r2sp.cluster`` by its name (``workers=4``,
        ``servers=1``, ``iterations=100``, ``partial_size=2``, ``no_plots=True``, ...), with
        the same defaults; values are Python values (tuples for the per-worker lists).

    Raises
    ------
    TypeError
        On a knob the command line does not have.
    ValueError
        On a bad value or a knob that does not apply to ``scheme`` (the CLI's messages), or a
        factory that is not importable (:class:`~fl_r2sp.importpath.ImportPathError`).
    """
    from fl_r2sp.cluster.cli import build_parser, config_from_namespace

    parser = build_parser()
    ns = parser.parse_args([])
    dests = {a.dest for a in parser._actions} - {"help"}
    unknown = sorted(set(knobs) - dests)
    if unknown:
        raise TypeError(f"unknown cluster knobs {unknown}; choose among {sorted(dests)}")
    job = {
        "model": _as_path(model, "model"),
        "dataset": _as_path(dataset, "dataset"),
        "loss": _as_path(loss, "loss"),
        "evaluate": _as_path(evaluate, "evaluate"),
    }
    for name, value in {"scheme": scheme, **job, **knobs}.items():
        setattr(ns, name, value)
    cfg = config_from_namespace(ns, frozenset({"scheme", *knobs}))
    cfg.validate()
    return cfg, ns


def run(cfg: ClusterRunConfig, start_method: str = "forkserver") -> TrainResult:
    """Run a validated config on this machine (every rank, supervised); the one path of
    :func:`train` and ``python -m fl_r2sp.cluster``.

    Raises
    ------
    ImportPathError
        If the job breaks its contract (checked before any rank starts).
    ClusterRunError
        If the run did not end well (its ``summary`` and ``status`` say how).
    """
    from fl_r2sp.cluster.launcher import launch

    summary = launch(cfg, start_method=start_method)
    return TrainResult(summary, Path(summary["run_dir"]))


def train(
    model: Factory,
    dataset: Factory,
    *,
    scheme: str = "r2sp",
    loss: Factory | None = None,
    evaluate: Factory | None = None,
    **knobs: Any,
) -> TrainResult:
    """Train the user's model with ``scheme`` on this machine; return summary, folder, weights.

    Arguments as :func:`make_config` (``launch_method`` picks how rank processes start:
    "forkserver" or "spawn"). Factories given as callables must be defined at a module's top
    level (rank processes import them by path).

    Raises
    ------
    TypeError, ValueError
        As :func:`make_config`, and :class:`~fl_r2sp.importpath.ImportPathError` if the job
        breaks its contract; both before any rank starts.
    ClusterRunError
        If the run did not end well.
    """
    cfg, ns = make_config(model, dataset, scheme=scheme, loss=loss, evaluate=evaluate, **knobs)
    return run(cfg, start_method=ns.launch_method)


def run_worker(
    model: Factory,
    dataset: Factory,
    *,
    scheme: str = "r2sp",
    loss: Factory | None = None,
    evaluate: Factory | None = None,
    **knobs: Any,
) -> TrainResult | None:
    """Run this process's rank of a job started by ``torchrun`` (``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK`` and the rendezvous come from it); rank 0 returns the result, others None.

    Every process of the job calls it with the same arguments; WORLD_SIZE must be the run's
    (servers + workers for a parameter-server scheme, the workers otherwise). The job is
    checked on each rank before it joins. torch's elastic agent ends a node's ranks when one of
    them fails, so under torchrun a lost worker ends that node's part of the job whatever the
    scheme's own rule (``docs/cluster.md``).
    """
    from fl_r2sp.cluster.local import base_of
    from fl_r2sp.cluster.rank import run_rank
    from fl_r2sp.cluster.userjob.job import check_job

    cfg, _ = make_config(model, dataset, scheme=scheme, loss=loss, evaluate=evaluate, **knobs)
    check_job(base_of(cfg))
    summary = run_rank(cfg)
    return None if summary is None else TrainResult(summary, Path(summary["run_dir"]))

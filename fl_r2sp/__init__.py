"""fl_r2sp: round-robin synchronization (R²SP, FL-R²SP) and its rivals, on Flower and PyTorch.

The public API, imported lazily (PEP 562, :mod:`fl_r2sp.lazy`): ``import fl_r2sp`` imports
neither torch nor Flower; each name loads its module on first use.

Federated mode (Flower strategies that drop into any ServerApp, and the in-process runner)::

    from fl_r2sp import FLR2SP, RunConfig
    result = FLR2SP(RunConfig(num_groups=4)).start(grid=grid, initial_arrays=arrays)

    from fl_r2sp import RunConfig, run
    out = run(RunConfig(strategy="fl-r2sp", max_updates=60))

Cluster mode (data-parallel training on torch.distributed, :mod:`fl_r2sp.cluster`;
``python -m fl_r2sp.cluster --help``)::

    from fl_r2sp import train
    result = train(model="mypkg.job:model", dataset="mypkg.job:data", scheme="r2sp", workers=4)

:func:`~fl_r2sp.cluster.api.train` runs every rank on this machine;
:func:`~fl_r2sp.cluster.api.run_worker` is the entry of a user's own ``torchrun`` script.

Layout: :mod:`fl_r2sp.fl` (the federated half), :mod:`fl_r2sp.cluster` (the cluster half) and
the shared blocks :mod:`fl_r2sp.datasets`, :mod:`fl_r2sp.models`, :mod:`fl_r2sp.training`,
:mod:`fl_r2sp.emulation`, :mod:`fl_r2sp.telemetry`.
"""

from __future__ import annotations

from fl_r2sp.lazy import lazy_exports

#: Public name -> the module that defines it.
EXPORTS: dict[str, str] = {
    # federated mode: the Flower strategy classes
    "FLR2SP": "fl_r2sp.fl.flower.strategy",
    "BSP": "fl_r2sp.fl.flower.strategy",
    "ASP": "fl_r2sp.fl.flower.strategy",
    "FedAsync": "fl_r2sp.fl.flower.strategy",
    "FedBuff": "fl_r2sp.fl.flower.strategy",
    # federated mode: the run configuration and the in-process runner
    "RunConfig": "fl_r2sp.fl.config",
    "run": "fl_r2sp.fl.server.runner",
    "RunOutput": "fl_r2sp.fl.server.run_output",
    # cluster mode: a user's own model on torch.distributed (fl_r2sp.cluster)
    "train": "fl_r2sp.cluster.api",
    "run_worker": "fl_r2sp.cluster.api",
    "TrainResult": "fl_r2sp.cluster.api",
}

__all__ = list(EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)

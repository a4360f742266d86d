"""Cluster mode: data-parallel training on torch.distributed (parameter servers, all-reduce groups).

Train your own model (the contract of its factories: :mod:`fl_r2sp.cluster.userjob`)::

    import fl_r2sp.cluster as cluster

    result = cluster.train(model="mypkg.job:model", dataset="mypkg.job:data",
                           scheme="r2sp", workers=4, servers=1)
    my_module.load_state_dict(result.state_dict)

:func:`train` runs every rank on this machine; :func:`run_worker` is the entry of a user's own
``torchrun`` script across machines; ``python -m fl_r2sp.cluster`` is :func:`train`'s command
line (the same knobs as flags). Importing this package imports neither torch nor Flower: the
names below load on first use.

One coordinator policy, two clocks (the same rule as the federated side):

* ``policies/``: plain-Python decisions (who may start its next iteration, when, with which
  batch size) and each scheme's parameter record. No torch.distributed, no sleeps, no
  wall-clock reads.
* ``runtime/``: the real thing on ``torch.distributed`` (gloo on CPU; workers compute on GPU
  where present).
* ``sim/``: the virtual-time twins that run the same policies over ``fl_r2sp.emulation``.

Each of the three is split by scheme family (``ps/``, ``osp/``, ``reduce/``, ``dssync/``, plus
``common/``); :mod:`fl_r2sp.cluster.schemes` is the one table from a scheme's name to its
record, rank entry, twin and command-line flags.
"""

from __future__ import annotations

from fl_r2sp.lazy import lazy_exports

#: Public name -> the module that defines it (imported on first access, PEP 562).
EXPORTS: dict[str, str] = {
    "TrainResult": "fl_r2sp.cluster.api",
    "make_config": "fl_r2sp.cluster.api",
    "run_worker": "fl_r2sp.cluster.api",
    "train": "fl_r2sp.cluster.api",
    "ClusterRunError": "fl_r2sp.cluster.launcher",
    "CLUSTER_SCHEMES": "fl_r2sp.cluster.schemes",
    "ImportPathError": "fl_r2sp.importpath",
}

__all__ = list(EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)

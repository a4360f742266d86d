"""Cluster mode: data-parallel training on torch.distributed (parameter servers, all-reduce groups).

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

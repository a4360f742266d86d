"""Cluster mode: data-parallel training on torch.distributed (parameter servers, all-reduce groups).

One coordinator policy, two clocks (the same rule as the federated side):

* ``policies/``: plain-Python decisions (who may start its next iteration, when, with which
  batch size). No torch.distributed, no sleeps, no wall-clock reads.
* ``runtime/``: the real thing on ``torch.distributed`` (gloo on CPU; workers compute on GPU
  where present).
* ``sim/``: the virtual-time twin that runs the same policies over ``fl_r2sp.emulation``.
"""

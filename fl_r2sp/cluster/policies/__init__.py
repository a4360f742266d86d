"""Coordinator policies of the cluster mode, by scheme family: plain-Python decisions.

* ``common/``: the policy contract (:mod:`.common.base`), decision tracing
  (:mod:`.common.trace`) and the base of every parameter-server scheme's record
  (:mod:`.common.params`);
* ``ps/``: the parameter-server schemes BSP, ASP, SSP, R²SP (with batch tuning) and SAFA, one
  module each holding the policy and its record;
* ``osp/``: OSP's layer choice, LGP rule, ICS budget, coordinator and record;
* ``reduce/``: the all-reduce family's controllers (all reduce, partial, selective);
* ``dssync/``: DS-Sync's group patterns, baselines and regrouping.

The runtime and the virtual-time twin call the same policy objects; the scheme table
(:mod:`fl_r2sp.cluster.schemes`) names each scheme's record. No torch.distributed, no sleeps,
no wall-clock reads and no global RNG here (the architecture test checks this folder).

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

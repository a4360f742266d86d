"""The real cluster runtime on torch.distributed (gloo): parameter servers, workers, coordinator.

The entry modules sit one level up, above the scheme table they read:
:mod:`fl_r2sp.cluster.rank` (entry of one rank; ``torchrun -m fl_r2sp.cluster.rank``),
:mod:`fl_r2sp.cluster.launcher` (the one command's launcher: checks, then
:mod:`fl_r2sp.cluster.local`, all ranks as plain processes under a supervisor, no elastic
agent) and :mod:`fl_r2sp.cluster.cli` (flags). Nothing here imports them or
:mod:`fl_r2sp.cluster.schemes` (``tests/test_architecture.py`` checks it).

Packages by scheme family: ``ps/`` (shards, servers, the coordinator thread, Algorithm 1's
worker, rank 0's leader, the PS rank entry), ``osp/`` (OSP's roles on the PS runtime),
``reduce/`` and ``dssync/`` (the serverless families, on the shared steps of ``peer/``), and
``common/`` (wire protocol, store helpers, throttling, the convergence rule, joining and leaving
a job, the run-config protocol).

Fault behaviour (also in the README, "Cluster mode"):

* every blocking call is bounded: gloo transfers by the process group's timeout (``--timeout``),
  store waits by explicit timeouts, the whole run by ``--run-timeout`` (a watchdog per rank);
* a worker that dies or falls silent: under BSP (barrier apply mode) the run ends with an
  error naming the rank (OSP too); under ASP, SSP, R²SP and SAFA the coordinator drops it
  (``policy.on_worker_lost``) and the others continue, as partial and selective reduce and
  DS-Sync do;
* a parameter server that dies: the workers that notice set the fatal key and the run ends
  with an error naming it; rank 0 lost: the one-command supervisor
  (:mod:`fl_r2sp.cluster.local`) stops the others and the run fails naming it;
* under torchrun (several machines) each node's elastic agent still stops its own ranks when
  one of them fails; a whole node that vanishes is what the survivors see as lost peers.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

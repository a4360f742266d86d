"""The real cluster runtime on torch.distributed (gloo): parameter servers, workers, coordinator.

Entry modules here: :mod:`.rank` (entry of one rank; ``torchrun -m
fl_r2sp.cluster.runtime.rank``: it looks the scheme up in :mod:`fl_r2sp.cluster.schemes`),
:mod:`.launcher` (the one-machine elastic launcher), :mod:`.local` (all ranks as plain
processes, no elastic agent: tests and benchmarks), :mod:`.cli` (flags).

Packages by scheme family: ``ps/`` (shards, servers, the coordinator thread, Algorithm 1's
worker, rank 0's leader, the PS rank entry), ``osp/`` (OSP's roles on the PS runtime),
``reduce/`` and ``dssync/`` (the serverless families, on the shared steps of ``peer/``), and
``common/`` (wire protocol, store helpers, throttling, the convergence rule, joining and leaving
a job, the run-config protocol).

Fault behaviour (also in the README, "Cluster mode"):

* every blocking call is bounded: gloo transfers by the process group's timeout (``--timeout``),
  store waits by explicit timeouts, the whole run by ``--run-timeout`` (a watchdog per rank);
* a worker that dies or falls silent: under BSP (barrier apply mode) the run ends with an
  error naming the rank; under ASP, SSP, R²SP and SAFA the coordinator drops it
  (``policy.on_worker_lost``) and the others continue;
* a parameter server that dies: the workers that notice set the fatal key and the run ends
  with an error naming it;
* with the one-machine launcher, torch's elastic agent additionally stops every rank as soon
  as one rank process exits with a non-zero code (see :mod:`.launcher`).
"""

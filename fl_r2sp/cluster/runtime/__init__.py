"""The real cluster runtime on torch.distributed (gloo): parameter servers, workers, coordinator.

Modules: :mod:`.protocol` (wire format and store keys), :mod:`.shard` (a shard and its update
rule), :mod:`.server` (a PS rank's per-worker threads), :mod:`.coordinator` (the policy on the
wall clock), :mod:`.worker` (Algorithm 1's worker loop), :mod:`.leader` (rank 0 and the run
directory), :mod:`.rank` (entry of one rank; ``torchrun -m fl_r2sp.cluster.runtime.rank``),
:mod:`.launcher` (the one-machine elastic launcher), :mod:`.local` (all ranks as plain
processes, no elastic agent: tests and benchmarks), :mod:`.cli` (flags), :mod:`.links` (a
worker's transfers to every shard), :mod:`.convergence` (the stop rule), :mod:`.throttle`
(token bucket and chunked transfers).

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

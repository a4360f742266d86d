"""What a worker of a family without a parameter server holds and does locally.

The all-reduce family's :class:`~..reduce.worker.ReduceWorker` and the DS-Sync family's
:class:`~..dssync.worker.DSSyncWorker` build the same local state (device, seeded model, the
flattened parameters they synchronise, a backup for failed reduces, a process-group cache, a
seeded batch stream, the kill test hook) and take the same local SGD step on the flattened
parameters, followed by the same emulated slowdown; :class:`PeerWorker` is that common part.
How a round or iteration is scheduled and synchronised stays in the subclasses.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common.losses import ExitBoard
from fl_r2sp.cluster.runtime.peer.subgroups import SubgroupCache
from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV, pick_device, worker_seed
from fl_r2sp.cluster.userjob.job import TrainingJob


def kill_iteration(worker: int) -> int:
    """The iteration after which the test hook ``FL_R2SP_CLUSTER_KILL="<worker>:<k>"`` ends
    ``worker``'s process, or -1 (the variable unset or naming another worker)."""
    kill = os.environ.get(KILL_ENV, "")
    return int(kill.split(":")[1]) if kill and int(kill.split(":")[0]) == worker else -1


class PeerWorker:
    """Local state and step of worker ``rank`` (rank == worker id).

    Parameters
    ----------
    base : ClusterConfig
        ``model``, ``dataset``, ``data_dir``, ``max_train``, ``batch_size``, ``lr``,
        ``compute_multipliers``, ``iteration_delays``, ``scripted_compute``, ``devices``,
        ``seed`` and ``timeout_s`` (process groups) are used.
    rank, local_rank : int
        This rank.
    flat : torch.Tensor
        The initial flattened parameters (copied into ``self.flat``, on the CPU).
    store : dist.Store
        A store client owned by this worker's thread.
    """

    def __init__(
        self, base: ClusterConfig, rank: int, local_rank: int, flat: torch.Tensor, store: Any
    ) -> None:
        self.base, self.w, self.store = base, rank, store
        self.device = pick_device(base.devices, rank, local_rank)
        self.job = TrainingJob(base)
        self.model = self.job.build_model()
        self.model.to(self.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.flat = flat.detach().clone().contiguous()
        self.backup = torch.empty_like(self.flat)  # the model before a reduce that may fail
        self.groups = SubgroupCache(store, rank, base.timeout_s)
        # Peers' exits as the supervisor publishes them (worker w is rank w here).
        self.board = ExitBoard(store, lambda r: names.rank_name(r, base.workers, base.workers))
        self.stream: Any = None
        if not base.scripted_compute:  # scripted runs only sleep: no data to load
            self.stream = self.job.stream(rank, worker_seed(base.seed, rank))
        self.kill_at = kill_iteration(rank)

    def sgd_step(self) -> float:
        """One local SGD step of ``self.flat`` on this worker's next batch; returns the loss."""
        nn.utils.vector_to_parameters(self.flat.to(self.device), self.params)
        x, y = self.stream.take(self.base.batch_size)
        self.model.train()
        self.model.zero_grad(set_to_none=False)
        loss = self.job.loss(self.model, x.to(self.device), y.to(self.device))
        loss.backward()  # type: ignore[no-untyped-call]  # torch leaves backward untyped
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        self.flat.add_(torch.cat([g.reshape(-1) for g in grads]).cpu(), alpha=-self.base.lr)
        return float(loss.item())

    def slow_down(self, t0: float) -> None:
        """Sleep the emulated slowdown of a compute that began at ``time.perf_counter()`` =
        ``t0``: (``compute_multipliers[w]`` - 1) x its duration plus ``iteration_delays[w]``."""
        base = self.base
        slow = base.compute_multipliers[self.w] - 1.0 if base.compute_multipliers else 0.0
        delay = slow * (time.perf_counter() - t0)
        delay += base.iteration_delays[self.w] if base.iteration_delays else 0.0
        if delay > 0:
            time.sleep(delay)

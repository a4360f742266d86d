"""A worker of the decentralised all-reduce runtime: compute, announce, reduce with a group.

Round ``k`` of worker ``w``:

1. take a ticket (``store.add(TICKETS, 1)``); beyond the budget, set ``ready/w/k`` =
   ``{"stop": true}`` and leave (no partner ever waits for it: the controller shrinks its
   live set);
2. compute one local SGD step on its own batch (or sleep the scripted time), sleep the
   emulated slowdown;
3. set ``ready/w/k`` with the compute time and loss, wait for ``assign/w/k`` (the group id,
   members, this member's weight, and the process-group plan; or ``stop``);
4. drop the groups the plan names, get or build the group's ``ProcessGroupGloo``, run the
   weighted all-reduce of its flattened parameters through its link's token bucket, and set
   ``done/w/k`` with the reduce time, the bytes it charged and whether it succeeded. A failed
   reduce (a member died) restores the parameters from before the reduce; the round still
   counts.

Every wait is bounded (the assignment by :meth:`ReduceRunConfig.queue_timeout_s`: long enough
for a partner to finish a reduce and a round; gloo by the groups' timeout).
Test hook: ``FL_R2SP_CLUSTER_KILL="<worker>:<round>"`` makes the process exit abruptly right
after announcing that round (it then sits in the ready queue, dead).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import torch

from fl_r2sp.cluster.runtime.common.context import set_json, wait_get
from fl_r2sp.cluster.runtime.common.throttle import TokenBucket
from fl_r2sp.cluster.runtime.peer.subgroups import weighted_allreduce
from fl_r2sp.cluster.runtime.peer.worker import PeerWorker
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig

PREFIX = "fl_r2sp/rd/"
TICKETS = f"{PREFIX}tickets"
GO_KEY = f"{PREFIX}go"


def up_key(w: int) -> str:
    """Worker ``w`` has built its model and data and waits for the start."""
    return f"{PREFIX}up/{w}"


def ready_key(w: int, k: int) -> str:
    """Worker ``w`` finished computing round ``k`` (or leaves: ``stop``)."""
    return f"{PREFIX}ready/{w}/{k}"


def assign_key(w: int, k: int) -> str:
    """The controller's group assignment of worker ``w``'s round ``k``."""
    return f"{PREFIX}assign/{w}/{k}"


def done_key(w: int, k: int) -> str:
    """Worker ``w`` finished the reduce of round ``k``."""
    return f"{PREFIX}done/{w}/{k}"


class ReduceWorker(PeerWorker):
    """One worker rank (rank == worker id) of an all-reduce-family run.

    Parameters
    ----------
    cfg : ReduceRunConfig
        The run.
    rank, local_rank, flat, store
        As for :class:`~fl_r2sp.cluster.runtime.peer.worker.PeerWorker` (local state and step).
    """

    def __init__(
        self, cfg: ReduceRunConfig, rank: int, local_rank: int, flat: torch.Tensor, store: Any
    ) -> None:
        super().__init__(cfg.base, rank, local_rank, flat, store)
        self.cfg, base = cfg, cfg.base
        caps = cfg.link_caps()
        chunk = base.chunk_kb * 1024
        self.bucket = TokenBucket(caps[rank] * 1e6, chunk) if caps else None
        self.chunk_bytes = chunk
        self.rounds = 0
        self.queue_timeout_s = cfg.queue_timeout_s(4.0 * self.flat.numel())

    def run(self) -> None:
        """Play rounds until the budget or a stop; leave on a silent controller."""
        set_json(self.store, up_key(self.w), {})
        wait_get(self.store, GO_KEY, self.base.timeout_s, delete=False)
        k = 0
        try:
            while self._round(k):
                k += 1
        except TimeoutError as exc:  # the controller went silent: leave rather than hang
            print(f"[worker {self.w}] no assignment from the controller: {exc}", flush=True)
        finally:
            self.rounds = k
            self.groups.clear()

    def _round(self, k: int) -> bool:
        if int(self.store.add(TICKETS, 1)) > self.cfg.budget:
            set_json(self.store, ready_key(self.w, k), {"stop": True})
            return False
        t0 = time.perf_counter()
        loss = self._compute(k)
        self.slow_down(t0)
        compute_s = time.perf_counter() - t0
        set_json(self.store, ready_key(self.w, k), {"compute_s": compute_s, "loss": loss})
        if k == self.kill_at:
            os._exit(17)  # test hook: die while queued
        assign = wait_get(self.store, assign_key(self.w, k), self.queue_timeout_s)
        if assign.get("stop"):
            return False
        set_json(self.store, done_key(self.w, k), self._reduce(assign))
        return True

    def _compute(self, k: int) -> float:
        """One local SGD step on this worker's next batch; returns the batch loss."""
        if self.base.scripted_compute:
            # Tickets are global: a fast worker may play more rounds than max_iterations (the
            # script's length); its last time repeats, as in the simulator.
            times = self.base.scripted_compute[self.w]
            time.sleep(times[min(k, len(times) - 1)])
            return math.nan
        return self.sgd_step()

    def _reduce(self, assign: dict[str, Any]) -> dict[str, Any]:
        """Run the assigned weighted all-reduce; return the done report."""
        members = [int(m) for m in assign["members"]]
        weight = float(assign["weights"][members.index(self.w)])
        self.groups.drop(assign.get("drop", []))
        self.backup.copy_(self.flat)
        t0 = time.perf_counter()
        out: dict[str, Any] = {"ok": True, "bytes": 0, "build_s": 0.0, "sync_s": 0.0}
        try:
            pg = None
            if len(members) > 1:
                pg = self.groups.get(assign["pg"], members, bool(assign["build"]))
            t1 = time.perf_counter()
            out["bytes"] = weighted_allreduce(self.flat, weight, pg, self.bucket,
                                              self.chunk_bytes, self.base.timeout_s, members,
                                              self.board)  # fmt: skip
            out["build_s"], out["sync_s"] = t1 - t0, time.perf_counter() - t1
        except Exception as exc:  # a member died or timed out: keep the pre-reduce model
            self.flat.copy_(self.backup)
            self.groups.abandon(assign.get("pg", ""))
            out.update(ok=False, error=str(exc).splitlines()[0][:200] if str(exc) else "error")
            out["sync_s"] = time.perf_counter() - t0
        if assign.get("ephemeral"):
            self.groups.drop([assign["pg"]])
        return out

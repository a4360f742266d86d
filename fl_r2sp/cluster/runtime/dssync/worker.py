"""A worker of the DS-Sync runtime: local step, group average, EMA, period boundaries.

Iteration t of worker w (the paper's Pseudo Code 1, ``docs/paper-notes.md`` §6):

1. one local SGD step on its own batch (plus the emulated slowdown);
2. synchronise by the scheme: DS-Sync and all-reduce BSP average the parameters within
   ``groups[t % B][w]`` (all-reduce BSP: one group of everyone), hierarchical all-reduce
   averages over everyone rack by rack, gossip averages with one peer of the exponential graph;
3. ``ema = f·ema + (1 − f)·params`` (the local "SWA" copy; it starts at the first synchronised
   model, so a short run carries no weight of the random initial model).

Every ``period`` iterations (and after the last) the workers meet at a *boundary*: each sends
rank 0 its reduce records (group, seconds) and telemetry rows of the period; rank 0 decides the
next :class:`~.plan.Plan` (:func:`~.plan.decide`) and publishes it. After the last
boundary the live workers average their EMA copies and their models over everyone.

Faults: a synchronisation stops waiting the moment one of its peers is known to be gone (the
supervisor publishes a dead rank, :mod:`~fl_r2sp.cluster.runtime.common.losses`) or another
member marks the member set broken. A failed synchronisation (a member died, gave up, or the
timeout passed) restores the parameters from before it, marks the member set broken for every
member until the next boundary (:func:`broken_key`: later iterations with that set skip it
instead of waiting for the dead member again, and no member waits for one that already gave
up) and abandons the set's process groups; the boundary then drops the workers that did not
report or are gone and bumps the group generation. A worker that rank 0 left out stops. Every
wait is bounded (gloo by ``timeout_s``, boundaries by the boundary timeout), for peers that
hang without dying. Test hook: ``FL_R2SP_CLUSTER_KILL="<worker>:<t>"`` exits the process
right after computing iteration t.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

import torch

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import set_json, wait_get
from fl_r2sp.cluster.runtime.common.losses import Watch
from fl_r2sp.cluster.runtime.dssync.comm import gossip_exchange, group_average
from fl_r2sp.cluster.runtime.dssync.comm import hierarchical_average as hier_average
from fl_r2sp.cluster.runtime.dssync.config import DSSyncRunConfig
from fl_r2sp.cluster.runtime.dssync.links import worker_links
from fl_r2sp.cluster.runtime.dssync.plan import Plan, View
from fl_r2sp.cluster.runtime.peer.subgroups import set_key, weighted_allreduce
from fl_r2sp.cluster.runtime.peer.worker import PeerWorker

PREFIX = "fl_r2sp/ds/"
GO_KEY = f"{PREFIX}go"
#: Set by rank 0 when the run's time limit passes: workers stop training and run on to the
#: next boundary, which ends the run (:func:`final_key`); a synchronisation waiting for a
#: peer that stopped gives up.
STOP_KEY = f"{PREFIX}stop"


def up_key(w: int) -> str:
    """Worker ``w`` is ready to start."""
    return f"{PREFIX}up/{w}"


def report_key(b: int, w: int) -> str:
    """Worker ``w``'s report at boundary ``b``."""
    return f"{PREFIX}report/{b}/{w}"


def plan_key(b: int) -> str:
    """Rank 0's plan after boundary ``b``."""
    return f"{PREFIX}plan/{b}"


def final_key(b: int) -> str:
    """Set by rank 0 before its plan of boundary ``b`` when the run's time limit has passed:
    every live worker ends training at that boundary (the final averages follow)."""
    return f"{PREFIX}final/{b}"


def broken_key(epoch: str, members: str) -> str:
    """Set by the first member whose synchronisation of the set ``members`` failed in the
    period ``epoch`` (``"g<generation>.b<boundaries>"``); the others then skip the set too."""
    return f"{PREFIX}broken/{epoch}/{members}"


class DSSyncWorker(PeerWorker):
    """One worker rank (rank == worker id) of a DS-Sync-family run.

    Parameters
    ----------
    cfg : DSSyncRunConfig
        The run.
    rank, local_rank, flat, store
        As for :class:`~fl_r2sp.cluster.runtime.peer.worker.PeerWorker` (local state and step).
    epoch : float
        Wall time of the run's start (the telemetry clock's zero).
    tag : str
        Unique name of the run (store keys of the shared uplinks).
    """

    def __init__(self, cfg: DSSyncRunConfig, rank: int, local_rank: int, flat: torch.Tensor,
                 store: Any, epoch: float, tag: str) -> None:  # fmt: skip
        super().__init__(cfg.base, rank, local_rank, flat, store)
        base = cfg.base
        self.cfg, self.epoch = cfg, epoch
        self.scratch = torch.empty_like(self.flat)
        self.ema: torch.Tensor | None = None
        self.racks = cfg.rack_map()
        self.rack_of = {r: c for c, rack in enumerate(self.racks) for r in rack}
        self.links = worker_links(store, rank, self.rack_of[rank], cfg.nic_mb_s,
                                  cfg.uplink_mb_s, tag)  # fmt: skip
        self.chunk = base.chunk_kb * 1024
        self.pg_ids: dict[str, str] = {}  # member set -> id of its cached process group
        self.broken: set[str] = set()
        self.boundaries = 0
        self.plan = Plan(tuple(range(base.workers)))
        self.view = View(self.plan, self.racks, cfg.scheme)
        self.records: list[list[Any]] = []
        self.rows: list[dict[str, Any]] = []
        self.failed = 0
        self.iterations = 0
        self._stop = False

    def now(self) -> float:
        """Seconds since the run's epoch (the telemetry clock)."""
        return time.time() - self.epoch

    def run(self, boundary: Any) -> bool:
        """Train ``max_iterations`` iterations; return False if rank 0 left this worker out.

        ``boundary(b, report) -> Plan`` exchanges a boundary's report for the next plan (rank 0
        decides; the others wait for its key).
        """
        for t in range(self.base.max_iterations):
            if t > 0 and t % self.cfg.params.period == 0:
                if not self._boundary(boundary, t):
                    return False
                if self.store.check([final_key(t // self.cfg.params.period)]):
                    return True  # the time limit passed: the lead ended training here
            if self.stopped():
                continue  # run on to the next boundary without training (time limit)
            self._iteration(t)
            self.iterations = t + 1
        return self._boundary(boundary, -1)

    def stopped(self) -> bool:
        """Whether the lead published :data:`STOP_KEY` (the run's time limit passed)."""
        if not self._stop:
            self._stop = bool(self.store.check([STOP_KEY]))
        return self._stop

    def _boundary(self, boundary: Any, t: int) -> bool:
        b = t // self.cfg.params.period if t >= 0 else -1
        report = {"failed": self.failed, "records": self.records, "rows": self.rows, "t": t}
        plan = boundary(b, report)
        self.records, self.rows, self.failed = [], [], 0
        if self.w not in plan.live:
            print(f"[worker {self.w}] left out at boundary {b}: stopping", flush=True)
            return False
        self.boundaries += 1
        if plan.generation != self.plan.generation:
            self.groups.clear()
            self.pg_ids.clear()
            self.broken.clear()
        self.plan, self.view = plan, View(plan, self.racks, self.cfg.scheme)
        if self.cfg.scheme == "dssync":  # keep only the groups of this period's pattern
            keep = {set_key(g) for g in self.view.groups_of(self.w)}
            gone = [k for k in self.pg_ids if k not in keep]
            self.groups.drop([self.pg_ids.pop(k) for k in gone])
        return True

    def _iteration(self, t: int) -> None:
        t0 = self.now()
        loss = self._compute()
        compute_s = self.now() - t0
        if t == self.kill_at:
            os._exit(17)  # test hook: die between computing and synchronising
        members, sent, ok, sync_s = self._sync(t)
        if self.ema is None:
            self.ema = self.flat.clone()
        else:
            f = self.cfg.params.ema_factor
            self.ema.mul_(f).add_(self.flat, alpha=1.0 - f)
        self.rows.append({
            "worker": self.w, "iteration": t, "compute_s": compute_s, "push_s": sync_s,
            "pull_s": 0.0, "blocking_s": 0.0, "permission_s": 0.0,
            "batch_size": self.base.batch_size, "staleness": 0, "loss": loss,
            "t_start": t0, "t_end": t0 + compute_s + sync_s, "group": set_key(members),
            "group_size": len(members), "sent_bytes": sent, "ok": ok,
        })  # fmt: skip

    def _compute(self) -> float:
        """One local SGD step (plus the emulated slowdown); returns the batch loss."""
        base, t0 = self.base, time.perf_counter()
        if base.scripted_compute:
            time.sleep(base.scripted_compute[self.w][self.iterations])
            loss = float("nan")
        else:
            loss = self.sgd_step()
        self.slow_down(t0)
        return loss

    def _sync(self, t: int) -> tuple[tuple[int, ...], int, bool, float]:
        """Synchronise iteration ``t``; returns (members, bytes sent, ok, seconds)."""
        scheme, view = self.cfg.scheme, self.view
        if scheme == "gossip":
            members: tuple[int, ...] = tuple(sorted({self.w, *view.gossip_peers(t, self.w)}))
        elif scheme == "hierarchical":
            members = tuple(view.live)
        else:
            members = view.group(t, self.w)
        key = set_key(members)
        if len(members) > 1 and key not in self.broken and self._broken_mark(key) is not None:
            self.broken.add(key)  # another member gave up on this set: do not wait for it
            self.failed += 1
        if len(members) == 1 or key in self.broken:
            return members, 0, key not in self.broken, 0.0
        self.backup.copy_(self.flat)
        t0 = time.perf_counter()
        try:
            sent = self._exchange(t, members, self._watch(t, members, key))
        except Exception as exc:  # a member died, gave up or timed out: keep the pre-sync model
            self.flat.copy_(self.backup)
            self._give_up(key, members)
            msg = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            print(f"[worker {self.w}] iteration {t}: sync with {key} failed: {msg}", flush=True)
            return members, 0, False, time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        if scheme == "dssync":
            self.records.append([list(members), seconds])
        return members, sent, True, seconds

    def _period(self) -> str:
        return f"g{self.plan.generation}.b{self.boundaries}"

    def _broken_mark(self, key: str) -> str | None:
        """Why another member gave up on the set ``key`` this period, or None."""
        if self.stopped():
            return "the run's time limit passed"
        mark = broken_key(self._period(), key)
        if not self.store.check([mark]):
            return None
        return f"{key} was given up by a member: {P.loads(self.store.get(mark)).get('why')}"

    def _watch(self, t: int, members: tuple[int, ...], key: str) -> Watch:
        """What the synchronisation of iteration ``t`` watches while it waits: its peers'
        exits, and (a shared member set) the set's broken mark."""
        if self.cfg.scheme == "gossip":  # a pair of peers of its own: no shared set to mark
            return Watch(tuple(p for p in self.view.gossip_peers(t, self.w) if p != self.w),
                         self.board, lambda: "the run's time limit passed" if self.stopped()
                         else None)  # fmt: skip
        peers = tuple(m for m in members if m != self.w)
        return Watch(peers, self.board, lambda: self._broken_mark(key))

    def _give_up(self, key: str, members: tuple[int, ...]) -> None:
        """Mark the set broken here and for its other members; abandon its process groups
        (an operation on them may still wait for the dead member)."""
        self.broken.add(key)
        self.failed += 1
        if self.cfg.scheme != "gossip":
            with contextlib.suppress(Exception):  # first writer wins; the store may be going
                self.store.compare_set(broken_key(self._period(), key), "",
                                       P.dumps({"by": self.w, "why": "sync failed"}))  # fmt: skip
        inside = set(members)
        for k in [k for k in self.pg_ids if {int(r) for r in k.split("-")} <= inside]:
            self.groups.abandon(self.pg_ids.pop(k))

    def _exchange(self, t: int, members: tuple[int, ...], watch: Watch) -> int:
        base, view = self.base, self.view
        if self.cfg.scheme == "gossip":
            peers = view.gossip_peers(t, self.w)
            return gossip_exchange(self.flat, self.scratch, self.w, peers, self.links,
                                   self.rack_of, self.chunk, base.timeout_s, watch, t)  # fmt: skip
        if self.cfg.scheme == "hierarchical":
            rack, leaders = view.rack_of(self.w), view.leaders()
            rack_pg = self._group(tuple(rack)) if len(rack) > 1 else None
            lead_pg = self._group(leaders) if self.w == rack[0] and len(leaders) > 1 else None
            return hier_average(self.flat, self.w, rack, leaders, rack_pg, lead_pg, self.links,
                                len(view.live), self.chunk, base.timeout_s, watch)  # fmt: skip
        pg = self._group(members)
        return group_average(self.flat, members, self.w, pg, self.links, self.rack_of,
                             self.chunk, base.timeout_s, watch)  # fmt: skip

    def _group(self, members: tuple[int, ...]) -> Any:
        """The process group of ``members``, built by all of them together the first time they
        meet in this generation (members meet a set in the same iteration and drop it at the
        same boundaries, so they agree on the id)."""
        key = set_key(members)
        if key in self.pg_ids:
            return self.groups.get(self.pg_ids[key], members, False)
        # a fresh id per build: a set dropped and met again must not find old rendezvous keys
        self.pg_ids[key] = f"ds.{key}.g{self.plan.generation}.b{self.boundaries}"
        return self.groups.get(self.pg_ids[key], members, True)

    def final_average(self) -> tuple[torch.Tensor, torch.Tensor]:
        """World averages of the EMA copies and of the models over the live workers."""
        live = self.plan.live
        ema = (self.ema if self.ema is not None else self.flat).clone()
        model = self.flat.clone()
        if len(live) > 1:
            pg = self.groups.get(f"ds.end.g{self.plan.generation}", live, True)
            for vec in (ema, model):
                weighted_allreduce(vec, 1.0 / len(live), pg, None, self.chunk, self.base.timeout_s,
                                   live, self.board)  # fmt: skip
        return ema, model


def exchange_boundary(store: Any, w: int, b: int, report: dict[str, Any], timeout_s: float
                      ) -> Plan:  # fmt: skip
    """A non-zero worker's side of a boundary: post the report, wait for rank 0's plan."""
    set_json(store, report_key(b, w), report)
    return Plan.from_json(wait_get(store, plan_key(b), timeout_s, delete=False))

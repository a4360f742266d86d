"""The controller of the all-reduce runtime: a thread on rank 0 that runs a reduce controller.

It is the only place where a :class:`~fl_r2sp.cluster.policies.reduce.ReduceController` meets
the wall clock. One waiter thread per worker (its own store client) follows that worker's key
sequence ``ready/w/0, done/w/0, ready/w/1, ...`` (``store.wait``, never the queue API; a
waiter is ended by setting the key it waits on to a halt message) and forwards each to an
in-process queue. The main loop passes a ready worker to
``on_ready`` and each :class:`Launch` to its members as ``assign/w/k`` (group id, members,
weights, the process-group plan of :class:`~fl_r2sp.cluster.runtime.peer.subgroups.GroupRegistry`);
when every member's ``done`` has arrived it calls ``on_done``; it calls ``on_timer`` at
``next_deadline()``. A ready report that arrives before its worker's previous group was
closed waits until it is, so the controller sees events in a valid order.

Bandwidth estimates (``bw_estimate="measured"``): after each reduce every member's estimate
becomes the highest rate (bytes charged / reduce time) any of its reduces reached.

Faults: a worker whose process ended is lost the moment the supervisor publishes it
(:mod:`~fl_r2sp.cluster.runtime.common.losses`, evidence "process exit"); its group's other
members stop waiting for it at the same moment. Every other wait is bounded, for workers that
hang without dying (evidence "timeout"): a worker that stays silent ``ready_timeout_s`` after
its round began, that does not report a launched reduce within the group timeout (it died
while queued), or that stays queued longer than its own assignment timeout (it gave up), is lost
(``on_worker_lost``); the others continue, and a reduce that failed because of it leaves their
models as they were before it. A worker whose ticket is beyond the budget leaves the same way
(``finished``). The convergence rule stops every worker at its next report (the ticket counter
is pushed past the budget).
"""

from __future__ import annotations

import contextlib
import datetime
import math
import queue
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch.distributed as dist
from torch.distributed.distributed_c10d import Store

from fl_r2sp.cluster.policies.reduce import Launch, ReduceController
from fl_r2sp.cluster.policies.reduce.base import READY, SYNCING, TRAINING
from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import new_store, set_json
from fl_r2sp.cluster.runtime.common.convergence import ConvergenceTracker
from fl_r2sp.cluster.runtime.common.job import timeout_reason
from fl_r2sp.cluster.runtime.common.losses import EXIT, LOOK_S, TIMEOUT, ExitBoard, reason_of
from fl_r2sp.cluster.runtime.peer.subgroups import GroupRegistry
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig
from fl_r2sp.cluster.runtime.reduce.worker import (
    GO_KEY,
    TICKETS,
    assign_key,
    done_key,
    ready_key,
    up_key,
)
from fl_r2sp.cluster.telemetry import ClusterRunWriter

TICK_S = 0.05
WAITER_JOIN_S = 2.0
#: Beyond its own assignment timeout, after which a queued worker counts as gone.
GIVE_UP_MARGIN_S = 2.0


class _Waiter(threading.Thread):
    """Follows one worker's ready/done keys and forwards them (see the module docstring)."""

    def __init__(self, w: int, out: queue.Queue[tuple[Any, ...]], limit_s: float) -> None:
        super().__init__(name=f"reduce-waiter-{w}", daemon=True)
        self.w, self.out, self.limit_s = w, out, limit_s
        self.halt = threading.Event()
        self.store = new_store()
        self.key = ready_key(w, 0)  # the key it waits on now

    def stop(self, store: Store) -> None:
        """Wake and end the waiter: set its current key to a halt message."""
        self.halt.set()
        set_json(store, self.key, {"halt": True})

    def run(self) -> None:
        k = 0
        while True:
            ready = self._get(ready_key(self.w, k))
            if ready is None:
                return
            self.out.put(("ready", self.w, k, ready))
            if ready.get("stop"):
                return
            done = self._get(done_key(self.w, k))
            if done is None:
                return
            self.out.put(("done", self.w, k, done))
            k += 1

    def _get(self, key: str) -> dict[str, Any] | None:
        # One long wait, not short slices (each timed-out slice logs a c10d warning); stop()
        # wakes it by setting the key.
        self.key = key
        if self.halt.is_set():
            return None
        try:
            self.store.wait([key], datetime.timedelta(seconds=self.limit_s))
        except dist.DistStoreError:
            return None
        value = P.loads(self.store.get(key))
        self.store.delete_key(key)
        return None if self.halt.is_set() or value.get("halt") else value


@dataclass
class _Group:
    launch: Launch
    start: float
    pg_id: str
    rounds: dict[int, int]  # member -> its round k
    pending: set[int]
    results: dict[int, dict[str, Any]] = field(default_factory=dict)


class ReduceCoordinator:
    """Runs ``ctl`` for the workers of ``cfg`` on the wall clock (see the module docstring).

    Parameters
    ----------
    cfg : ReduceRunConfig
        The run.
    ctl : ReduceController
        A fresh controller for ``cfg.base.workers`` workers.
    epoch : float
        ``time.time()`` of the run's start (times are seconds since it).
    model_bytes : float
        Size of the reduced vector (the group timeout allows for its throttled transfer).
    writer : ClusterRunWriter or None
        Receives one row per completed worker round and the controller's decisions as they
        are taken.
    """

    def __init__(self, cfg: ReduceRunConfig, ctl: ReduceController, epoch: float,
                 model_bytes: float, writer: ClusterRunWriter | None = None) -> None:  # fmt: skip
        n = cfg.base.workers
        if ctl.n != n:
            raise ValueError(f"the controller has {ctl.n} workers, the run {n}")
        self.cfg, self.ctl, self.epoch, self.writer = cfg, ctl, epoch, writer
        self.model_bytes = model_bytes
        self.caps = [c * 1e6 for c in cfg.link_caps()]
        self.registry = GroupRegistry(cfg.cache_groups)
        self.store = new_store()
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.waiters = [_Waiter(w, self.events, cfg.base.run_timeout_s) for w in range(n)]
        self.inflight: dict[int, _Group] = {}
        self.group_of: dict[int, int] = {}
        self.buffered: dict[int, tuple[Any, ...]] = {}
        self.rows: dict[tuple[int, int], dict[str, Any]] = {}
        self.syncs: list[dict[str, Any]] = []
        self.finished: set[int] = set()
        self.lost: dict[int, str] = {}
        self.evidence: dict[int, str] = {}  # worker -> how its loss was known
        self.lost_at: dict[int, float] = {}  # worker -> time.time() its loss was applied
        self.board = ExitBoard(self.store, lambda r: names.rank_name(r, n, n))
        self._next_look = 0.0
        self.measured = [0.0] * n
        self.last_loss: dict[int, float] = {}  # every worker's latest loss (kept after it left)
        self.tracker = ConvergenceTracker(cfg.base.loss_threshold, cfg.base.convergence_window)
        self.stopping: str | None = None
        self.converged_at: float | None = None
        self.error: str | None = None
        self.started = self.ended = 0.0
        self._traced = 0  # entries of the controller's trace already handed to the writer

    def now(self) -> float:
        """Seconds since the run's epoch."""
        return time.time() - self.epoch

    # -- main loop ------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Coordinate until every worker finished or is lost; return the statistics."""
        for waiter in self.waiters:
            waiter.start()
        self._await_workers()
        self.started = self.now()
        self._publish(self.ctl.start(self.started))
        set_json(self.store, GO_KEY, {"t": self.started})
        limit = self.started + self.cfg.base.run_timeout_s
        while not self._over():
            if self.now() > limit:
                self.error = timeout_reason(self.cfg.base.run_timeout_s)
                self._time_out()
                break
            try:
                ev: tuple[Any, ...] | None = self.events.get(timeout=self._sleep_s())
            except queue.Empty:
                ev = None
            if ev is not None:
                self._handle(ev)
            self._timers()
            self._liveness()
        self.ended = self.now()
        self.ctl.finish(self.ended)
        self.record_trace()
        for waiter in self.waiters:
            if waiter.is_alive():
                waiter.stop(self.store)
        for waiter in self.waiters:
            waiter.join(WAITER_JOIN_S)
        return self.stats()

    def _await_workers(self) -> None:
        """Start together: wait (bounded) until every worker has built its model and data, so
        a slow starter does not find the ticket budget spent. A missing one is lost later."""
        keys = [up_key(w) for w in range(self.ctl.n)]
        with contextlib.suppress(dist.DistStoreError):
            self.store.wait(keys, datetime.timedelta(seconds=self.cfg.base.timeout_s))

    def _over(self) -> bool:
        return len(self.finished) + len(self.lost) >= self.ctl.n and not self.inflight

    def _sleep_s(self) -> float:
        due = self.ctl.next_deadline()
        if due is None:
            return TICK_S
        return min(TICK_S, max(0.001, due - self.now()))

    def _timers(self) -> None:
        due = self.ctl.next_deadline()
        if due is not None and self.now() >= due:
            self._publish(self.ctl.on_timer(self.now()))

    # -- events ---------------------------------------------------------------------------
    def _handle(self, ev: tuple[Any, ...]) -> None:
        kind, w, k, payload = ev
        if w in self.lost:
            return
        if kind == "done":
            self._done(w, payload)
        elif self.ctl.state[w] == SYNCING:
            self.buffered[w] = ev  # its previous group is still open
        elif payload.get("stop"):
            self._leave(w, tell=False)
        else:
            self._ready(w, k, payload)

    def _ready(self, w: int, k: int, payload: dict[str, Any]) -> None:
        now = self.now()
        loss = float(payload.get("loss", math.nan))
        compute_s = float(payload["compute_s"])
        self.last_loss[w] = loss
        self.rows[(w, k)] = {"worker": w, "iteration": k, "compute_s": compute_s,
                             "loss": loss, "t_ready": now}  # fmt: skip
        live = self.ctl.live
        if self.tracker.add(w, loss, live) and self.stopping is None:
            self.converged_at = now
            self._stop_all("converged")
        if self.stopping is not None:
            self._leave(w, tell=True)
            return
        self._publish(self.ctl.on_ready(w, now, k, compute_s))

    def _done(self, w: int, payload: dict[str, Any]) -> None:
        gid = self.group_of.pop(w, None)
        if gid is None or gid not in self.inflight:
            return
        grp = self.inflight[gid]
        grp.results[w] = payload
        grp.pending.discard(w)
        rate = float(payload.get("bytes", 0)) / max(float(payload.get("sync_s", 0.0)), 1e-9)
        if payload.get("ok") and payload.get("bytes", 0) > 0:
            self.measured[w] = max(self.measured[w], rate)
            if self.cfg.bw_estimate == "measured":
                self.ctl.bandwidth[w] = self.measured[w]
        if not grp.pending:
            self._close(gid)

    def _close(self, gid: int) -> None:
        grp = self.inflight.pop(gid)
        now = self.now()
        members = grp.launch.members
        gone = [w for w in members if w in self.lost]
        ok = not gone and all(r.get("ok") for r in grp.results.values())
        if not ok:
            self.registry.invalidate(grp.pg_id)
        self.syncs.append({"group": gid, "members": members, "start": grp.start, "end": now,
                           "ok": ok, "full": grp.launch.full,
                           "waited_s": grp.launch.waited_s})  # fmt: skip
        self._rows(grp, now)
        launches = self.ctl.on_done(gid, now)
        for w in gone:
            launches += self.ctl.on_worker_lost(w, now)
        self._publish(launches)
        for w in members:
            ev = self.buffered.pop(w, None)
            if ev is not None:
                self._handle(ev)

    def _exits(self, now: float) -> None:
        """Lose every worker whose process the supervisor saw end (at most every LOOK_S)."""
        if now < self._next_look:
            return
        self._next_look = now + LOOK_S
        live = [w for w in range(self.ctl.n) if w not in self.lost and w not in self.finished]
        for w, seen in self.board.gone(live).items():
            self._lose(w, reason_of(seen), str(seen.get("evidence", EXIT)))
            gid = self.group_of.pop(w, None)
            grp = self.inflight.get(gid) if gid is not None else None
            if grp is None:
                self._publish(self.ctl.on_worker_lost(w, now))
                continue
            grp.pending.discard(w)  # its group closes without it (and applies the loss)
            if not grp.pending:
                self._close(gid)  # type: ignore[arg-type]  # gid is set when grp is

    def _liveness(self) -> None:
        now = self.now()
        self._exits(now)
        gave_up = self.cfg.queue_timeout_s(self.model_bytes) + GIVE_UP_MARGIN_S
        for w in range(self.ctl.n):
            if w in self.lost or w in self.finished:
                continue
            state = self.ctl.state[w]
            if state == TRAINING and now - self.ctl.round_start[w] > self.cfg.ready_timeout_s:
                self._lose(w, f"no report within {self.cfg.ready_timeout_s:.0f}s of its round",
                           TIMEOUT)  # fmt: skip
            elif state == READY and now - self.ctl.ready_at[w] > gave_up:
                self._lose(w, f"queued for over {gave_up:.0f}s: it gave up waiting", TIMEOUT)
            else:
                continue
            self._publish(self.ctl.on_worker_lost(w, now))
        for gid, grp in list(self.inflight.items()):
            if now - grp.start > self._group_timeout(grp.launch.members):
                for w in list(grp.pending):
                    self._lose(w, f"no report of its reduce in group {gid}", TIMEOUT)
                    self.group_of.pop(w, None)
                grp.pending.clear()
                self._close(gid)

    def _group_timeout(self, members: tuple[int, ...]) -> float:
        slow = min((self.caps[w] for w in members), default=math.inf) if self.caps else math.inf
        return self.cfg.group_timeout_s(self.model_bytes, len(members), slow / 1e6)

    def _lose(self, w: int, why: str, evidence: str) -> None:
        self.lost[w] = why
        self.evidence[w] = evidence
        self.lost_at[w] = time.time()
        self.waiters[w].stop(self.store)
        self.tracker.drop(w)

    def _leave(self, w: int, tell: bool) -> None:
        """Worker ``w`` is done (budget or stop); ``tell``: send it the stop assignment."""
        if tell:
            set_json(self.store, assign_key(w, int(self.ctl.iterations[w])), {"stop": True})
        self.finished.add(w)
        self.tracker.drop(w)
        self._publish(self.ctl.on_worker_lost(w, self.now()))

    def _time_out(self) -> None:
        """Stop every worker now: the queued ones and those computing get a stop assignment,
        those reducing find the ticket budget spent (nobody waits for an answer)."""
        self._stop_all("timeout")
        for w in range(self.ctl.n):
            if w not in self.finished and w not in self.lost and self.ctl.state[w] == TRAINING:
                set_json(self.store, assign_key(w, int(self.ctl.iterations[w])), {"stop": True})

    def _stop_all(self, reason: str) -> None:
        self.stopping = reason
        self.store.add(TICKETS, self.cfg.budget + self.ctl.n)  # every later ticket is beyond
        for w in list(self.ctl.queue):
            if w not in self.finished:
                self._leave(w, tell=True)

    # -- launches -------------------------------------------------------------------------
    def record_trace(self) -> None:
        """Hand the controller's new decisions to the writer (streamed to ``permissions.csv``)."""
        trace = self.ctl.trace
        if self.writer is not None:
            self.writer.trace_rows(trace[self._traced :])
        self._traced = len(trace)

    def _publish(self, launches: list[Launch]) -> None:
        self.record_trace()  # every controller call's launches come through here
        for la in launches:
            if self.stopping is not None:
                for w in la.members:  # the run is ending: no more reduces
                    if self.ctl.state[w] == SYNCING and w not in self.finished:
                        set_json(self.store, assign_key(w, int(self.ctl.iterations[w])),
                                 {"stop": True})  # fmt: skip
                        self.finished.add(w)
                continue
            self._launch(la)

    def _launch(self, la: Launch) -> None:
        members = list(la.members)
        plan = self.registry.plan(members) if len(members) > 1 else None
        rounds = {w: int(self.ctl.iterations[w]) for w in members}
        for w, weight in zip(members, la.weights, strict=True):
            payload: dict[str, Any] = {"group": la.group, "members": members,
                                       "weights": list(la.weights), "weight": weight}  # fmt: skip
            if plan is not None:
                payload.update(pg=plan.pg_id, build=plan.build, drop=plan.drops.get(w, []),
                               ephemeral=plan.ephemeral)  # fmt: skip
            set_json(self.store, assign_key(w, rounds[w]), payload)
            self.group_of[w] = la.group
        pg_id = plan.pg_id if plan is not None else ""
        self.inflight[la.group] = _Group(la, self.now(), pg_id, rounds, set(members))

    def _rows(self, grp: _Group, now: float) -> None:
        for w, k in grp.rounds.items():
            row = self.rows.pop((w, k), None)
            res = grp.results.get(w, {})
            if row is None or self.writer is None:
                continue
            t_ready = row.pop("t_ready")
            self.writer.worker_row(
                **row, blocking_s=grp.start - t_ready, pull_s=0.0,
                push_s=float(res.get("sync_s", math.nan)), build_s=res.get("build_s"),
                group=grp.launch.group, group_size=len(grp.launch.members),
                ok=bool(res.get("ok", False)), t_start=t_ready - row["compute_s"], t_end=now,
            )  # fmt: skip

    # -- results --------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """The run's synchronisation statistics (sync time: launch to last member's report)."""
        ok = [s for s in self.syncs if s["ok"]]
        dur = [s["end"] - s["start"] for s in ok]
        sizes = [len(s["members"]) for s in ok]
        rows = self.writer.workers if self.writer is not None else []
        waits = [float(r["blocking_s"]) for r in rows]
        return {
            "started_at": self.started, "ended_at": self.ended, "error": self.error,
            "stop_reason": self.stopping or ("error" if self.error else "budget"),
            "total_syncs": len(ok), "failed_syncs": len(self.syncs) - len(ok),
            "total_iterations": sum(sizes),
            "sync_time_s": statistics.fmean(dur) if dur else None,
            "queue_wait_s": statistics.fmean(waits) if waits else None,
            "scale": statistics.fmean(sizes) if sizes else None,
            "time_to_threshold_s": (None if self.converged_at is None
                                    else self.converged_at - self.started),  # fmt: skip
            "final_loss": _finite_mean(list(self.last_loss.values())),
            "lost_workers": {str(w): why for w, why in self.lost.items()},
            "lost_evidence": {str(w): ev for w, ev in self.evidence.items()},
            "lost_at": {str(w): at for w, at in self.lost_at.items()},
            "groups_built": self.registry.builds,
            "launches": [list(s["members"]) for s in self.syncs],
            "bandwidth_estimate": [float(b) for b in self.ctl.bandwidth],
        }  # fmt: skip


def _finite_mean(values: list[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else None

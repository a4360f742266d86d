"""The coordinator: a thread on PS rank 0 that runs a coordinator policy on the wall clock.

It is the only place where the policy meets real time. Requests-to-Proceed arrive as store
keys ``req/<w>/<k>`` (one waiter thread per worker blocks on the next key and forwards it to
an in-process queue); the coordinator passes each to ``policy.on_push`` with ``now`` = seconds
since the run's epoch, keeps permissions whose ``at`` lies in the future in a heap, asks
``policy.on_timer`` at ``policy.next_deadline()``, and delivers each permission at its time by
setting ``grant/<w>/<k>`` (the batch size rides on it). The main loop sleeps on the queue until
the next due time, at most :data:`TICK_S`.

Ending: a permission for iteration ``max_iterations`` becomes a stop message for that worker,
which then leaves the policy (``on_worker_lost``, so that no policy waits for a finished
worker); the convergence rule (:mod:`~fl_r2sp.cluster.runtime.common.convergence`) or an error stops
every worker at its next permission. The loop ends once every worker is stopped and has
reported every iteration it was granted, or is lost.

Permission order (R²SP's ``push_order = "permission"``): a request whose push was overtaken
(an earlier permission's push has not arrived) is parked, and its verdict withheld, until the
sequencer (:mod:`fl_r2sp.cluster.policies.ps.push_order`) releases it; then its push is
applied at every shard and its report reaches the policy. A lost worker releases the pushes
that wait for it (its own parked push is dropped); stopping releases every parked push.
Each wait is recorded in ``permissions.csv`` (``order_wait``, with the push it waits for).

Admission (policies with ``admission``: SAFA, and R²SP in permission order): for each request
the coordinator asks ``policy.accepts(w)`` right before ``policy.on_push`` (the instant the
twin asks it too) and sets ``verdict/<w>/<k>``; every shard holds that push until the key
appears and applies or drops it accordingly. A lost worker's outstanding push, and a request
that comes too late to be handled, get a drop verdict, so no shard waits for a verdict that
never comes.

Faults: a worker whose transfers with PS 0 fail (its process died) or that sends no request
within ``timeout_s`` of its permission is lost. Under an ``apply_mode == "barrier"`` scheme
(BSP) that ends the run with an error naming the rank; other schemes continue without it
(``policy.on_worker_lost``). A worker that cannot reach a parameter server sets the fatal key,
which ends the run with its message.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fl_r2sp.cluster.policies.common.base import CoordinatorPolicy, Permission, PushReport
from fl_r2sp.cluster.policies.ps.push_order import PushSequencer
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, set_json, wait_get
from fl_r2sp.cluster.runtime.common.convergence import ConvergenceTracker
from fl_r2sp.cluster.runtime.common.job import timeout_reason
from fl_r2sp.cluster.runtime.common.losses import CLOSED, EXIT, TIMEOUT, ExitBoard, reason_of
from fl_r2sp.cluster.runtime.ps.shard import ShardState
from fl_r2sp.cluster.telemetry import ClusterRunWriter

TICK_S = 0.25
#: Seconds between two looks for lost workers while waiting for the workers to be ready.
LOSS_POLL_S = 0.1


@dataclass
class _Track:
    """Coordinator-side state of one worker."""

    next_grant: int = 0  # iteration of the next grant key to set
    reported: int = 0  # requests received = iterations completed
    granted_at: float | None = None  # time of the outstanding (unreported) grant
    stopped: bool = False
    lost: str | None = None
    evaluate: bool = False


@dataclass
class CoordinatorResult:
    """What the coordinator hands to rank 0's summary."""

    stop_reason: str = "running"
    error: str | None = None
    converged_at: float | None = None
    final_loss: float = float("nan")
    pushes: int = 0
    started_at: float = 0.0
    ended_at: float = 0.0
    lost: dict[int, str] = field(default_factory=dict)
    #: worker -> how its loss was known (:mod:`~fl_r2sp.cluster.runtime.common.losses`)
    evidence: dict[int, str] = field(default_factory=dict)
    #: worker -> wall-clock time (``time.time()``) its loss was applied
    lost_at: dict[int, float] = field(default_factory=dict)
    evaluator: int | None = None


def push_report(w: int, now: float, payload: dict[str, Any]) -> PushReport:
    """The policy's view of worker ``w``'s request ``payload`` (its iteration telemetry).

    Communication is the pull plus the push: R²SP's T is compute + both transfers.
    """
    return PushReport(
        worker=w, iteration=int(payload["iteration"]), now=now,
        compute_s=float(payload["compute_s"]),
        comm_s=float(payload["pull_s"]) + float(payload["push_s"]),
        blocking_s=float(payload["blocking_s"]), batch_size=int(payload["batch_size"]),
        loss=float(payload["loss"]),
    )  # fmt: skip


class Coordinator:
    """Runs ``policy`` for the workers of ``ctx`` (see the module docstring).

    Parameters
    ----------
    ctx : RankContext
        Rank 0's context.
    policy : CoordinatorPolicy
        A fresh policy (the scheme record's ``policy``); its ``trace`` is streamed to the
        writer after every policy call, beside each permission's actual delivery.
    shard : ShardState
        PS 0's shard: the coordinator reads each push's staleness from it.
    writer : ClusterRunWriter
        Receives one worker row per request and the decision trace.
    """

    def __init__(self, ctx: RankContext, policy: CoordinatorPolicy, shard: ShardState,
                 writer: ClusterRunWriter) -> None:  # fmt: skip
        self.ctx, self.cfg, self.policy, self.shard, self.writer = (
            ctx, ctx.cfg, policy, shard, writer)  # fmt: skip
        self.events: queue.Queue[tuple[str, int, Any]] = queue.Queue()
        self.tracks = [_Track() for _ in range(self.cfg.workers)]
        self.heap: list[tuple[float, int, Permission]] = []
        self._seq = itertools.count()
        self.tracker = ConvergenceTracker(self.cfg.loss_threshold, self.cfg.convergence_window)
        self.result = CoordinatorResult()
        self._traced = 0  # entries of the policy's trace already handed to the writer
        # Permission order (R²SP's knob): pushes wait here, by (worker, iteration), until the
        # pushes of every earlier permission are applied.
        self.sequencer = PushSequencer() if policy.push_order == "permission" else None
        self.parked: dict[tuple[int, int], dict[str, Any]] = {}
        self.stopping = False
        self.closing = threading.Event()
        self._waiters: list[threading.Thread] = []
        self._next_req = [0] * self.cfg.workers
        self._next_progress = 0.0

    # -- entry points ------------------------------------------------------------------------
    def notify_lost(self, worker: int, reason: str) -> None:
        """Called from PS 0's threads when a transfer with ``worker`` failed."""
        self.events.put(("lost", worker, reason))

    def run(self) -> CoordinatorResult:
        """Coordinate until every worker is stopped or lost; never raises on worker faults."""
        self.store = new_store()
        self.board = ExitBoard(self.store, self.ctx.describe)
        try:
            lost_early = self._await_ready()
            self.result.started_at = self.ctx.now()
            self._schedule(self.policy.start(self.ctx.now()))
            for w, reason in lost_early.items():  # the scheme's rule, as for any later loss
                self._lose(w, f"before its first iteration: {reason}")
            for w in range(self.cfg.workers):
                t = threading.Thread(target=self._waiter, args=(w,), daemon=True,
                                     name=f"coord-waiter-w{w}")  # fmt: skip
                t.start()
                self._waiters.append(t)
            while not self._done():
                self._step()
        except Exception as exc:  # keep the run ending cleanly whatever broke here
            self._stop("error", f"coordinator failed: {type(exc).__name__}: {exc}")
        finally:
            self._close()
        return self.result

    # -- main loop -----------------------------------------------------------------------------
    def _step(self) -> None:
        now = self.ctx.now()
        self._deliver_due(now)
        if not self.stopping:
            deadline = self.policy.next_deadline()
            if deadline is not None and deadline <= now:
                self._schedule(self.policy.on_timer(now))
                return
        self._watchdog(now)
        wake = [now + TICK_S]
        if self.heap:
            wake.append(self.heap[0][0])
        deadline = None if self.stopping else self.policy.next_deadline()
        if deadline is not None:
            wake.append(deadline)
        try:
            kind, w, data = self.events.get(timeout=max(0.0, min(wake) - self.ctx.now()))
        except queue.Empty:
            return
        self._handle(kind, w, data)

    def _handle(self, kind: str, w: int, data: Any) -> None:
        if kind == "req":
            self._next_req[w] = int(data["iteration"]) + 1
            self._on_request(w, data)
        elif kind == "lost":
            self._lose(w, str(data), CLOSED)
        elif kind == "silent":
            tr = self.tracks[w]
            due = tr.granted_at is not None and self.ctx.now() - tr.granted_at > self.cfg.timeout_s
            if tr.lost is None and due:
                self._lose(w, f"no Request-to-Proceed within {self.cfg.timeout_s:.0f}s",
                           TIMEOUT)  # fmt: skip

    def _on_request(self, w: int, payload: dict[str, Any]) -> None:
        tr = self.tracks[w]
        k = int(payload["iteration"])
        if tr.lost is not None or k != tr.reported:
            return  # a late request of a worker already given up on
        tr.reported += 1
        tr.granted_at = None
        self.result.pushes += 1
        if self.sequencer is None or self.stopping:  # stopping: the sequence was flushed
            self._apply(w, payload)
            return
        self.parked[(w, k)] = payload
        released = self.sequencer.arrive(w, k)
        if (w, k) not in released:
            head = self.sequencer.head()
            self.writer.trace_rows([{"event": "order_wait", "at": self.ctx.now(), "worker": w,
                                     "iteration": k, "behind": str(head)}])  # fmt: skip
        self._apply_all(released)

    def _apply_all(self, pushes: list[tuple[int, int]]) -> None:
        """Apply the parked pushes the sequencer released, in its order."""
        for w, k in pushes:
            self._apply(w, self.parked.pop((w, k)))

    def _apply(self, w: int, payload: dict[str, Any]) -> None:
        """Have worker ``w``'s push applied (or dropped) and hand its report to the policy."""
        k = int(payload["iteration"])
        if self.policy.admission:  # before on_push: the verdict on the state that report meets
            self._verdict(w, k, self.policy.accepts(w))
        stale = self.shard.wait_push(w, k, self.cfg.timeout_s)
        tr = self.tracks[w]
        now = self.ctx.now()
        report = push_report(w, now, payload)
        row = {key: payload[key] for key in payload if key != "iteration"}
        self.writer.worker_row(worker=w, iteration=k, staleness=stale, **row)
        live = sum(1 for t in self.tracks if t.lost is None)
        if self.tracker.add(w, report.loss, live) and not self.stopping:
            self.result.converged_at = now
            self._stop("converged", None)
        if not self.stopping and not tr.stopped:
            self._schedule(self.policy.on_push(report))
        self._progress(now)

    def _verdict(self, w: int, k: int, apply: bool) -> None:
        """Publish the admission verdict on push ``(w, k)`` to every shard."""
        set_json(self.store, P.verdict_key(w, k), {"apply": bool(apply)})

    def _schedule(self, perms: list[Permission]) -> None:
        self._record_trace()  # every policy call's permissions come through here
        for p in perms:
            tr = self.tracks[p.worker]
            if tr.stopped or tr.lost is not None:
                continue
            if p.iteration >= self.cfg.max_iterations:
                self._send_stop(p.worker, "max_iterations")
                self._schedule(self.policy.on_worker_lost(p.worker, self.ctx.now()))
                continue
            heapq.heappush(self.heap, (p.at, next(self._seq), p))
            if self.sequencer is not None:
                self.sequencer.permit(p.worker, p.iteration)

    def _deliver_due(self, now: float) -> None:
        while self.heap and self.heap[0][0] <= now:
            _, _, p = heapq.heappop(self.heap)
            tr = self.tracks[p.worker]
            if tr.stopped or tr.lost is not None or self.stopping:
                continue
            if p.iteration != tr.next_grant:
                raise RuntimeError(f"policy granted worker {p.worker} iteration {p.iteration}, "
                                   f"expected {tr.next_grant}")  # fmt: skip
            t = self.ctx.now()
            set_json(self.store, P.grant_key(p.worker, p.iteration),
                     {"iteration": p.iteration, "batch_size": p.batch_size, "t": t})  # fmt: skip
            tr.next_grant += 1
            tr.granted_at = t
            self.writer.trace_rows([{"event": "delivered", "at": t, "worker": p.worker,
                                     "iteration": p.iteration, "batch_size": p.batch_size,
                                     "due": p.at}])  # fmt: skip

    def _record_trace(self) -> None:
        """Hand the policy's new decisions to the writer (streamed to ``permissions.csv``)."""
        trace: list[dict[str, Any]] = getattr(self.policy, "trace", [])
        self.writer.trace_rows(trace[self._traced :])
        self._traced = len(trace)

    # -- stopping ------------------------------------------------------------------------------
    def _send_stop(self, w: int, reason: str) -> None:
        tr = self.tracks[w]
        if tr.stopped or tr.lost is not None:
            return
        tr.stopped = True
        evaluate = (
            reason != "error"
            and self.result.evaluator is None
            and self.cfg.eval_samples > 0
            and not self.cfg.scripted_compute
        )
        if evaluate:
            self.result.evaluator = w
        set_json(
            self.store,
            P.grant_key(w, tr.next_grant),
            {"stop": True, "reason": reason, "evaluate": evaluate, "t": self.ctx.now()},
        )

    def _stop(self, reason: str, error: str | None) -> None:
        if self.result.error is None and error is not None:
            self.result.error = error
        if self.stopping:
            return
        self.stopping = True
        self.result.stop_reason = reason
        self.heap.clear()
        if self.sequencer is not None:  # nothing more is permitted: nobody waits any longer
            self._apply_all(self.sequencer.flush())
        # Stop the lowest live worker first: it is the one asked to evaluate.
        for w, tr in enumerate(self.tracks):
            if tr.lost is None and not tr.stopped:
                self._send_stop(w, reason if error is None else "error")
        if error is not None:
            self.shard.abort(error)
            set_json(self.store, P.STOP_KEY, {"reason": reason, "error": error})

    def _lose(self, w: int, reason: str, evidence: str = CLOSED) -> None:
        tr = self.tracks[w]
        if tr.lost is not None:
            return
        if tr.stopped and tr.reported >= tr.next_grant:
            return  # a finished worker closing its connections is not a loss
        tr.lost = reason
        self.result.lost[w] = reason
        self.result.evidence[w] = evidence
        self.result.lost_at[w] = time.time()
        set_json(self.store, P.lost_key(w), {"reason": reason})
        if self.policy.admission:  # its push in flight, if any, is not applied anywhere
            self._verdict(w, tr.reported, False)
        self.shard.lose(w)
        self.tracker.drop(w)
        who = self.ctx.describe(self.ctx.rank_of(w))
        print(f"[coordinator] lost {who}: {reason}", flush=True)
        if self.sequencer is not None:  # the pushes waiting for its push go on
            if self.parked.pop((w, tr.reported - 1), None) is not None:
                self._verdict(w, tr.reported - 1, False)  # its own parked push is dropped
            self._apply_all(self.sequencer.drop(w))
        if self.policy.apply_mode == "barrier" and not self.stopping:
            self._stop("error", f"{who} lost ({reason}); {self.policy.name} cannot continue "
                                "without it")  # fmt: skip
        elif not self.stopping:
            self._schedule(self.policy.on_worker_lost(w, self.ctx.now()))
            if all(t.lost is not None for t in self.tracks):
                self._stop("error", "every worker was lost")
        set_json(self.store, P.request_key(w, self._next_req[w]), {"cancel": True})

    def _done(self) -> bool:
        if self.result.error is not None:
            return True  # no point waiting for the last reports of a failed run
        return all(t.lost is not None or (t.stopped and t.reported >= t.next_grant)
                   for t in self.tracks)  # fmt: skip

    def _watchdog(self, now: float) -> None:
        live = {self.ctx.rank_of(w): w for w, t in enumerate(self.tracks) if t.lost is None}
        for rank, seen in self.board.gone(live).items():  # the supervisor saw it end
            self._lose(live[rank], reason_of(seen), str(seen.get("evidence", EXIT)))
        if self.store.check([P.FATAL_KEY]) and self.result.error is None:
            fatal = P.loads(self.store.get(P.FATAL_KEY))
            self._stop("error", str(fatal.get("message", fatal)))
        if self.ctx.now() - self.result.started_at > self.cfg.run_timeout_s:
            self._stop("timeout", timeout_reason(self.cfg.run_timeout_s))

    def _progress(self, now: float) -> None:
        if self.cfg.progress_s <= 0 or now < self._next_progress:
            return
        self._next_progress = now + self.cfg.progress_s
        done = self.result.pushes
        elapsed = max(now - self.result.started_at, 1e-9)
        print(f"[{self.policy.name}] t={elapsed:6.1f}s pushes={done} "
              f"({done / self.cfg.workers:.1f} it/worker, {done / elapsed:.2f} pushes/s) "
              f"loss={self.tracker.mean_loss():.4f}", flush=True)  # fmt: skip

    # -- waiters -------------------------------------------------------------------------------
    def _await_ready(self) -> dict[int, str]:
        """Wait until every worker is ready or lost; return the lost ones (worker -> reason).

        A loss reported now is marked in the store at once (:func:`P.lost_key`), so workers
        still in a start-up handshake stop waiting for that peer; the loss itself is applied
        once the policy has started (:meth:`run`), by the scheme's rule.

        Raises
        ------
        RuntimeError
            Naming every worker neither ready nor lost within ``timeout_s``.
        """
        waiting, lost = set(range(self.cfg.workers)), dict[int, str]()
        end = time.monotonic() + self.cfg.timeout_s
        while True:
            waiting -= {w for w in waiting if w in lost or self.store.check([P.ready_key(w)])}
            if not waiting:
                return lost
            if time.monotonic() > end:
                who = ", ".join(self.ctx.describe(self.ctx.rank_of(w))
                                for w in sorted(waiting))  # fmt: skip
                raise RuntimeError(f"{who} did not start within {self.cfg.timeout_s:.0f}s")
            # Block on a missing ready key (it wakes the moment the key is set: no added
            # latency before the start), a short while, then look for losses.
            with contextlib.suppress(TimeoutError):
                wait_get(self.store, P.ready_key(min(waiting)), LOSS_POLL_S, delete=False)
            while not self.events.empty():  # before the start only PS 0 reports (losses)
                _, w, reason = self.events.get_nowait()
                lost[w] = str(reason)
                set_json(self.store, P.lost_key(w), {"reason": str(reason)})

    def _waiter(self, w: int) -> None:
        store = new_store()
        k = 0
        while not self.closing.is_set():
            try:
                payload = wait_get(store, P.request_key(w, k), self.cfg.timeout_s)
            except TimeoutError:
                self.events.put(("silent", w, k))
                continue
            except Exception as exc:
                self.events.put(("lost", w, f"control store failed: {exc}"))
                return
            if payload.get("cancel"):
                return
            self.events.put(("req", w, payload))
            k += 1

    def _close(self) -> None:
        if self.result.stop_reason == "running":
            self.result.stop_reason = "max_iterations"
        self.result.ended_at = self.ctx.now()
        self.result.final_loss = self.tracker.mean_loss()
        self.closing.set()
        while True:  # late events only matter for their cancel keys
            try:
                kind, w, data = self.events.get_nowait()
            except queue.Empty:
                break
            if kind == "req":
                self._next_req[w] = int(data["iteration"]) + 1
                if self.policy.admission:  # too late to be handled: dropped at every shard
                    with contextlib.suppress(Exception):
                        self._verdict(w, int(data["iteration"]), False)
        for w, t in enumerate(self._waiters):
            if t.is_alive():
                # The store may be gone if the run is failing.
                with contextlib.suppress(Exception):
                    set_json(self.store, P.request_key(w, self._next_req[w]), {"cancel": True})
            t.join(1.0)
        self._record_trace()

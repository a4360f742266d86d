"""Virtual-time simulator of the all-reduce family (the selective-reduce paper's simulator).

Each worker cycles: compute one round (a draw from the trace) -> ready (``on_ready`` to the
controller) -> wait in the queue -> weighted ring all-reduce with its group -> next round. The
all-reduce takes the analytic ring time (:func:`~fl_r2sp.cluster.policies.reduce.ring_time`,
true bandwidths) or runs as flows on :mod:`fl_r2sp.emulation` (:mod:`.flow`). The
controller sees estimated bandwidths (error e) and, for BPAWR, a warm or cold compute CDF.

Tie-break at equal times: ring completions (flow mode) first, then (event-queue order) sync
ends, losses, ready workers, controller timers; one kind in worker / group order. A worker lost
while syncing leaves when its sync ends. Deterministic for a seed: every draw comes from
:func:`fl_r2sp.emulation.rng_for` streams keyed by (seed, stream, worker), so all schemes see the
same bandwidths and the same compute time for worker i's round k (common random numbers).

    result = run_reduce_sim(ReduceSimSpec(ReduceParams("selective"), num_workers=200, seed=3))
    result.metrics()["sync_time_s"]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fl_r2sp.cluster.policies.reduce import (
    EmpiricalProgress,
    Launch,
    ProgressModel,
    ReduceController,
    make_reduce_controller,
    ring_time,
)
from fl_r2sp.cluster.sim.common.events import (
    Handlers,
    SyncDone,
    TimerFired,
    WorkerLost,
    WorkerReady,
    dispatch,
    push,
)
from fl_r2sp.cluster.sim.reduce.flow import FlowRings
from fl_r2sp.cluster.sim.reduce.result import ReduceSimResult
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec
from fl_r2sp.cluster.sim.reduce.workload import (
    GBPS,
    ComputeModel,
    draw_bandwidths_gbps,
    estimate_bandwidths,
)
from fl_r2sp.emulation import Event, EventQueue, rng_for

_STREAM_BW, _STREAM_ERR, _STREAM_COMPUTE, _STREAM_WARM = 41, 42, 43, 44
_BLOCK = 64  # compute draws per worker per refill


class ReduceSim:
    """One trial of a :class:`ReduceSimSpec` (use :func:`run_reduce_sim`).

    ``controller`` replaces the one ``spec.params`` would build (a scripted schedule or a
    replay); it must be fresh and sized for ``spec.num_workers``.
    """

    def __init__(self, spec: ReduceSimSpec, controller: ReduceController | None = None) -> None:
        self.spec = spec.validate()
        n = spec.num_workers
        gbps = (
            np.asarray(spec.bandwidth_gbps, dtype=float)
            if spec.bandwidth_gbps is not None
            else draw_bandwidths_gbps(
                n, spec.bw_lambda, rng_for(spec.seed, _STREAM_BW), spec.bw_max_gbps
            )
        )
        self.bw = gbps * GBPS
        est = estimate_bandwidths(self.bw, spec.bw_error, rng_for(spec.seed, _STREAM_ERR))
        self.compute = ComputeModel(spec.trace, spec.trace_samples)
        self.ctl: ReduceController = controller or make_reduce_controller(
            spec.params,
            est.tolist(),
            spec.model_bytes,
            spec.alpha_s,
            self._progress(),
            spec.approx_time,
        )
        if self.ctl.n != n:
            raise ValueError(f"the controller has {self.ctl.n} workers, the spec {n}")
        self.rings = (
            FlowRings(self.bw.tolist(), spec.model_bytes, spec.alpha_s)
            if spec.network == "flow"
            else None
        )
        self.queue = EventQueue()
        self.rngs = [rng_for(spec.seed, _STREAM_COMPUTE, w) for w in range(n)]
        self.draws: list[list[float]] = [[] for _ in range(n)]
        self.iteration = [0] * n
        self.ready_event: dict[int, int] = {}
        self.dying: set[int] = set()
        self.dead: set[int] = set()
        self.sync_of: dict[int, dict[str, Any]] = {}
        self.timer_at: float | None = None
        self.now = 0.0
        self.result = ReduceSimResult(spec=spec, trace=self.ctl.trace, bandwidth_gbps=gbps)
        self.handlers: Handlers = {
            SyncDone: lambda e: self._sync_done(e.group),
            WorkerLost: lambda e: self._lose(e.worker),
            WorkerReady: self._ready,
            TimerFired: self._timer,
        }

    def _progress(self) -> ProgressModel | None:
        spec = self.spec
        if spec.progress is not None:
            return spec.progress
        if spec.start == "cold":
            return None  # the controller's default: cold-start empirical CDF
        rng = rng_for(spec.seed, _STREAM_WARM)
        samples = self.compute.draw(rng, spec.warm_samples) * spec.compute_scale
        return EmpiricalProgress(samples.tolist(), spec.params.hazard, 1, learn=False)

    # -- driver -----------------------------------------------------------------------
    def run(self) -> ReduceSimResult:
        """Run until ``duration_s`` and return the result."""
        end = self.spec.duration_s
        for w, t in sorted(self.spec.lost_at.items()):
            push(self.queue, t, WorkerLost(w), w)
        self._launch_all(self.ctl.start(0.0))
        for w in range(self.spec.num_workers):
            self._begin_round(w)
        while True:
            ev = self.queue.peek()
            t_ev = ev.time if ev is not None else math.inf
            t_net = self.rings.next_time() if self.rings is not None else None
            t = min(t_ev, math.inf if t_net is None else t_net)
            if t > end:
                break
            self.now = t
            if t_net is not None and t_net <= t_ev and self.rings is not None:
                for group, _ in self.rings.advance(t):
                    self._sync_done(group)
            else:
                self._event(self.queue.pop())
            self._arm_timer()
        self.ctl.finish(end)
        self.result.stats = dict(getattr(self.ctl, "stats", {}))
        self.result.end_time = end
        return self.result

    def _event(self, ev: Event) -> None:
        dispatch(self.handlers, ev.payload)

    def _ready(self, e: WorkerReady) -> None:
        w = e.worker
        self.ready_event.pop(w, None)
        self._launch_all(self.ctl.on_ready(w, self.now, self.iteration[w], e.compute_s))

    def _timer(self, e: TimerFired) -> None:
        if self.timer_at is not None and e.due == self.timer_at:  # else re-armed since
            self.timer_at = None
            self._launch_all(self.ctl.on_timer(self.now))

    def _arm_timer(self) -> None:
        due = self.ctl.next_deadline()
        if due is None or due == self.timer_at:
            return
        self.timer_at = max(due, self.now)
        push(self.queue, self.timer_at, TimerFired(self.timer_at))

    # -- workers and syncs -------------------------------------------------------------
    def _compute_s(self, w: int) -> float:
        script = self.spec.compute_script.get(w)
        if script is not None:
            return float(script[min(self.iteration[w], len(script) - 1)])
        if not self.draws[w]:
            block = self.compute.draw(self.rngs[w], _BLOCK) * self.spec.compute_scale
            self.draws[w] = block[::-1].tolist()
        return self.draws[w].pop()

    def _begin_round(self, w: int) -> None:
        c = self._compute_s(w)
        self.ready_event[w] = push(self.queue, self.now + c, WorkerReady(w, c), w)

    def _launch_all(self, launches: list[Launch]) -> None:
        for la in launches:
            members = list(la.members)
            min_bw = float(self.bw[members].min())
            rec: dict[str, Any] = {
                "group": la.group, "start": self.now, "end": math.nan, "members": la.members,
                "weights": la.weights, "waited_s": la.waited_s, "full": la.full,
                "min_bw": min_bw,
            }  # fmt: skip
            self.result.syncs.append(rec)
            self.sync_of[la.group] = rec
            if self.rings is not None:
                if self.rings.start(la.group, members, self.now):
                    push(self.queue, self.now, SyncDone(la.group), la.group)
            else:
                spec = self.spec
                t = ring_time(
                    len(members), spec.model_bytes, min_bw, spec.alpha_s, spec.approx_time
                )
                push(self.queue, self.now + t, SyncDone(la.group), la.group)

    def _sync_done(self, group: int) -> None:
        rec = self.sync_of.pop(group)
        rec["end"] = self.now
        launches = self.ctl.on_done(group, self.now)
        for w in rec["members"]:
            self.iteration[w] += 1
            if w in self.dying:
                self.dying.discard(w)
                self.dead.add(w)
                launches += self.ctl.on_worker_lost(w, self.now)
            elif w not in self.dead:
                self._begin_round(w)
        self._launch_all(launches)

    def _lose(self, w: int) -> None:
        if w in self.dead or w in self.dying:
            return
        if any(w in rec["members"] for rec in self.sync_of.values()):
            self.dying.add(w)  # leaves when its sync ends
            return
        self.dead.add(w)
        seq = self.ready_event.pop(w, None)
        if seq is not None:
            self.queue.cancel(seq)
        self._launch_all(self.ctl.on_worker_lost(w, self.now))


def run_reduce_sim(spec: ReduceSimSpec) -> ReduceSimResult:
    """Run one trial of ``spec`` (see the module docstring).

    Raises
    ------
    ValueError
        On a bad spec.
    """
    return ReduceSim(spec).run()

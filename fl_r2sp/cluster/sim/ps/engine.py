"""The twin's event loop: policies decide, the fluid network and compute model take time.

Each worker cycles: permission -> pull (S flows, one per shard) -> compute -> push (S flows) ->
Request-to-Proceed (a :class:`PushReport` to the policy, at the instant the last shard received
the update). Control messages take no time. Permissions with ``at > now`` and the policy's own
deadlines (:meth:`CoordinatorPolicy.next_deadline`) become timed events.

Permission order (R²SP's ``push_order = "permission"``): a push whose earlier-permitted pushes
have not all arrived waits (the worker is blocked) until the sequencer of
:mod:`fl_r2sp.cluster.policies.ps.push_order` releases it; only then is it applied (its
staleness counted) and its report given to the policy. A lost worker releases the wait.

Tie-break at equal times: flow completions first, then the typed events of
:mod:`fl_r2sp.cluster.sim.common.events` in their priority order (losses, compute completions,
permissions, policy timers); simultaneous events of one kind go in worker order. An event type
without a handler raises (:func:`~fl_r2sp.cluster.sim.common.events.dispatch`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fl_r2sp.cluster.policies.common.base import Permission, PushReport
from fl_r2sp.cluster.policies.common.trace import TracedPolicy
from fl_r2sp.cluster.policies.ps.push_order import PushSequencer
from fl_r2sp.cluster.sim.common.events import (
    ComputeDone,
    Handlers,
    PermitDue,
    TimerFired,
    WorkerLost,
    dispatch,
    push,
)
from fl_r2sp.cluster.sim.ps.result import TwinResult
from fl_r2sp.cluster.sim.ps.spec import TwinSpec
from fl_r2sp.emulation import Event, EventQueue, Network, rng_for

_STREAM_JITTER = 7


@dataclass
class _Worker:
    iteration: int = 0
    batch: int = 1
    t_request: float = 0.0  # when it last asked to proceed (run start for iteration 0)
    t_perm: float = 0.0
    t_pull_end: float = 0.0
    t_compute_end: float = 0.0
    flows: set[int] = field(default_factory=set)
    compute_event: int | None = None
    version_at_pull: int = 0
    alive: bool = True


class Twin:
    """One simulation run of a :class:`TwinSpec` (use :func:`simulate`)."""

    def __init__(self, spec: TwinSpec) -> None:
        self.spec = spec.validate()
        n, s = spec.num_workers, spec.num_servers
        self.policy: TracedPolicy = spec.params.policy(n, spec.batch_size)
        self.net = Network(keep_finished=False)
        for k in range(s):
            self.net.add_link(f"ps{k}-out", spec.server_bandwidth)
            self.net.add_link(f"ps{k}-in", spec.server_bandwidth)
        for i in range(n):
            self.net.add_link(f"w{i}-down", spec.worker_bandwidth)
            self.net.add_link(f"w{i}-up", spec.worker_bandwidth)
        self.queue = EventQueue()
        self.workers = [_Worker(batch=spec.batch_size) for _ in range(n)]
        self.speeds = spec.per_worker(spec.speeds, math.nan, "speeds")
        self.mult = spec.per_worker(spec.compute_multipliers, 1.0, "compute_multipliers")
        self.delays = spec.per_worker(spec.iteration_delays, 0.0, "iteration_delays")
        self.rngs = [rng_for(spec.seed, _STREAM_JITTER, i) for i in range(n)]
        self.shard_bytes = spec.model_bytes / s
        self.version = 0
        self.now = 0.0
        self.timer_at: float | None = None
        self.sequencer = PushSequencer() if self.policy.push_order == "permission" else None
        self.parked: dict[int, float] = {}  # worker -> arrival time of its waiting push
        self.result = TwinResult(spec=spec, trace=self.policy.trace)
        self.handlers: Handlers = {
            WorkerLost: lambda e: self._lose(e.worker),
            ComputeDone: lambda e: self._start_push(e.worker),
            PermitDue: lambda e: self._begin(e.permission),
            TimerFired: self._timer,
        }

    # -- driver -----------------------------------------------------------------------
    def run(self) -> TwinResult:
        """Run to the iteration target (or ``max_time``) and return the result."""
        for w, t in sorted(self.spec.lost_at.items()):
            push(self.queue, t, WorkerLost(w), w)
        self._permit_all(self.policy.start(0.0))
        while not self._done():
            nxt = self.net.next_completion()
            ev = self.queue.peek()
            t_net = nxt[0] if nxt is not None else math.inf
            t_ev = ev.time if ev is not None else math.inf
            t = min(t_net, t_ev)
            if t > self.spec.max_time or math.isinf(t):
                if math.isinf(t):
                    raise RuntimeError(self._stuck_message())
                self.result.truncated = True
                break
            self.now = t
            if t_net <= t_ev:
                for fid, end in self.net.advance(t):
                    self._flow_done(fid, end)
            else:
                self._event(self.queue.pop())
        self.result.end_time = self.now
        self.result.completed = dict(self.policy.completed)
        self.result.discarded = sorted(getattr(self.policy, "discarded", set()))
        return self.result

    def _done(self) -> bool:
        live = [w for w in range(self.spec.num_workers) if self.workers[w].alive]
        return not live or all(self.policy.completed[w] >= self.spec.iterations for w in live)

    def _stuck_message(self) -> str:
        waiting = {w: st.iteration for w, st in enumerate(self.workers) if st.alive}
        return (
            f"twin stalled at t={self.now:.6g}: no flow or event left, the policy "
            f"{self.policy.name!r} holds every live worker (next iterations {waiting})"
        )

    def _event(self, ev: Event) -> None:
        dispatch(self.handlers, ev.payload)

    def _timer(self, _: TimerFired) -> None:
        self.timer_at = None
        self._permit_all(self.policy.on_timer(self.now))

    # -- policy plumbing -------------------------------------------------------------------
    def _permit_all(self, perms: list[Permission]) -> None:
        for p in perms:
            if self.sequencer is not None:
                self.sequencer.permit(p.worker, p.iteration)
            if p.at > self.now:
                push(self.queue, p.at, PermitDue(p), p.worker)
            else:
                self._begin(p)
        self._arm_timer()

    def _arm_timer(self) -> None:
        due = self.policy.next_deadline()
        if due is None or due == self.timer_at:
            return
        if due < self.now:
            raise RuntimeError(f"policy deadline {due!r} lies before now={self.now!r}")
        self.timer_at = due
        push(self.queue, due, TimerFired(due))

    def _lose(self, w: int) -> None:
        st = self.workers[w]
        if not st.alive:
            return
        st.alive = False
        for fid in sorted(st.flows):
            self.net.cancel_flow(fid)
        st.flows.clear()
        if st.compute_event is not None:
            self.queue.cancel(st.compute_event)
        if self.sequencer is not None:  # its parked push is dropped; the others go on
            self.parked.pop(w, None)
            self._release(self.sequencer.drop(w))
        self._permit_all(self.policy.on_worker_lost(w, self.now))

    # -- one iteration -----------------------------------------------------------------------
    def _begin(self, p: Permission) -> None:
        st = self.workers[p.worker]
        if not st.alive:
            return
        st.iteration, st.batch, st.t_perm = p.iteration, p.batch_size, self.now
        self._start_flows(p.worker, "pull")

    def _start_flows(self, w: int, kind: str) -> None:
        st = self.workers[w]
        for s in range(self.spec.num_servers):
            links = (f"ps{s}-out", f"w{w}-down") if kind == "pull" else (f"w{w}-up", f"ps{s}-in")
            fid = self.net.start_flow(
                self.now,
                self.shard_bytes,
                links,
                self.spec.latency_s,
                tag=(kind, w, st.iteration, s),
            )
            st.flows.add(fid)

    def _flow_done(self, fid: int, end: float) -> None:
        kind, w, k, s = self.net.flow_info(fid).tag
        st = self.workers[w]
        if fid not in st.flows:
            return  # cancelled with a lost worker
        st.flows.discard(fid)
        if kind == "push":
            self.result.ps_arrivals.append((s, w, k, end))
        if st.flows:
            return
        if kind == "pull":
            st.t_pull_end = end
            st.version_at_pull = self.version
            st.compute_event = push(self.queue, end + self._compute_s(w, st), ComputeDone(w), w)
        else:
            self._finish(w, end)

    def _compute_s(self, w: int, st: _Worker) -> float:
        script = self.spec.compute_times.get(w)
        if script is not None:
            base = float(script[min(st.iteration, len(script) - 1)])
        else:
            base = st.batch / self.speeds[w] * self.mult[w]
        if self.spec.jitter_cv > 0:
            sigma2 = math.log1p(self.spec.jitter_cv**2)
            base *= float(np.exp(self.rngs[w].normal(-sigma2 / 2, math.sqrt(sigma2))))
        return base + self.delays[w]

    def _start_push(self, w: int) -> None:
        st = self.workers[w]
        st.compute_event = None
        st.t_compute_end = self.now
        self._start_flows(w, "push")

    def _finish(self, w: int, end: float) -> None:
        """The push of ``w`` has reached every shard at ``end``: apply it, or park it."""
        if self.sequencer is None:
            self._apply(w, end)
            return
        self.parked[w] = end
        self._release(self.sequencer.arrive(w, self.workers[w].iteration))

    def _release(self, pushes: list[tuple[int, int]]) -> None:
        for w, _ in pushes:
            self._apply(w, self.parked.pop(w))

    def _apply(self, w: int, end: float) -> None:
        """Apply ``w``'s push that arrived at ``end`` now and report it to the policy."""
        st = self.workers[w]
        accepts = getattr(self.policy, "accepts", None)
        applied = accepts(w) if accepts is not None else True
        barrier = self.policy.apply_mode == "barrier"
        staleness = 0 if barrier else self.version - st.version_at_pull
        pull_s, push_s = st.t_pull_end - st.t_perm, end - st.t_compute_end
        compute_s = st.t_compute_end - st.t_pull_end
        blocking_s = st.t_perm - st.t_request
        self.result.add_row(
            w,
            st.iteration,
            st.t_perm,
            pull_s,
            compute_s,
            push_s,
            blocking_s,
            st.batch,
            staleness,
            end,
        )
        if applied and not barrier:
            self.version += 1
        st.t_request = end
        report = PushReport(w, st.iteration, self.now, compute_s, pull_s + push_s, blocking_s,
                            st.batch)  # fmt: skip
        perms = self.policy.on_push(report)
        if barrier and perms:
            self.version += 1  # the averaged update is applied before anyone pulls
        self._permit_all(perms)


def simulate(spec: TwinSpec) -> TwinResult:
    """Run the virtual-time twin of ``spec`` and return its :class:`TwinResult`.

    Raises
    ------
    ValueError
        On a bad spec.
    RuntimeError
        If the policy stalls (holds every live worker with nothing left to happen).
    """
    return Twin(spec).run()

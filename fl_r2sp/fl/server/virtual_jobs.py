"""Job phases and availability of the virtual-time loop: the event handlers.

A job's life in virtual time (``docs/architecture.md`` §4): :meth:`dispatch` starts the pull
flow and submits the job to its node (one message in flight per node), the pull's end and the
real reply together schedule the push start (or a failure), the push flow's end hands the
update to the policy; a client going offline fails its job and parks later sends until it is
back. :class:`~fl_r2sp.fl.server.virtual_loop.VirtualLoop` owns the state these handlers use and
the conservative rule that decides when an event may run.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from fl_r2sp.emulation.availability import AvailabilityModel
from fl_r2sp.emulation.clock import VirtualClock
from fl_r2sp.emulation.events import EventQueue
from fl_r2sp.emulation.network import Network, pull_links, push_links
from fl_r2sp.fl.policies.base import Update
from fl_r2sp.fl.server.loop_base import LoopBase
from fl_r2sp.fl.server.virtual_checks import push_start
from fl_r2sp.fl.server.virtual_events import (
    ClientOffline,
    ClientOnline,
    JobFailed,
    JobState,
    PullDone,
    PushDone,
    PushStart,
    QueuedEvent,
)


class VirtualJobPhases(LoopBase):
    """The job-phase and availability handlers of a virtual-time loop.

    Not a loop on its own: the attributes below are set by
    :class:`~fl_r2sp.fl.server.virtual_loop.VirtualLoop`'s ``__init__``.
    """

    net: Network
    model_bytes: float
    overhead: float
    compute_lb: dict[int, float]
    availability: AvailabilityModel | None
    seed: int
    clock: VirtualClock
    queue: EventQueue
    active: dict[int, JobState]
    flows: dict[int, PullDone | PushDone]
    unreplied: dict[tuple[int, int], JobState]
    deferred: dict[int, JobState]
    offline_until: dict[int, float]
    parked: dict[int, tuple[np.ndarray, int]]
    _bounds: list[tuple[float, int, int]]
    _pull_lbs: dict[int, float]
    _node_jobs: set[int]

    def _pull_lb(self, cid: int) -> float:
        """Uncontended pull time of ``cid`` (a lower bound of any pull)."""
        lb = self._pull_lbs.get(cid)
        if lb is None:
            lb = self.net.uncontended_time(self.model_bytes, pull_links(cid), self.overhead)
            self._pull_lbs[cid] = lb
        return lb

    def _schedule(self, at: float, key: int, event: QueuedEvent) -> None:
        """Queue ``event`` at ``at``; ties break by its type's priority, then ``key``."""
        self.queue.push(at, event.priority, key, event)

    # -- job phases ------------------------------------------------------------------
    def dispatch(self, now: float, cid: int, weights: np.ndarray, tag: int) -> None:
        """Start the pull of a new job (or park it while the client is offline)."""
        if self.offline_until.get(cid, -1.0) > now or cid in self.active:
            self.parked[cid] = (weights, tag)  # the newest send wins
            return
        job = self.next_job(cid, weights, tag)
        st = JobState(job=job, dispatch=now)
        self.active[cid] = st
        self.unreplied[(cid, job.index)] = st
        bound = now + self._pull_lb(cid) + self.compute_lb.get(cid, 0.0)
        heapq.heappush(self._bounds, (bound, cid, job.index))
        st.pull_fid = self.net.start_flow(
            now, self.model_bytes, pull_links(cid), self.overhead, tag=cid
        )
        self.flows[st.pull_fid] = PullDone(st)
        self.events.dispatched(cid, job.index, tag, now, self.policy.group_of(cid))
        if self._node_busy(cid):
            self.deferred[cid] = st
        else:
            self._submit(st)
        self._schedule_dropout(now, st)

    def _node_busy(self, cid: int) -> bool:
        # A dead job's message may still be running on the node: one in flight per node.
        return cid in self._node_jobs

    def _submit_deferred(self, cid: int) -> None:
        st = self.deferred.get(cid)
        if st is not None and not self._node_busy(cid):
            del self.deferred[cid]
            if not st.dead:
                self._submit(st)

    def _submit(self, st: JobState) -> None:
        st.submitted, st.sent = True, time.monotonic()
        self._node_jobs.add(st.job.cid)
        self.transport.submit(st.job)

    def _pull_done(self, t: float, event: PullDone) -> None:
        st = event.state
        st.pull_end = t
        self.events.job(st.job.cid, st.job.index)["pull_end"] = t
        if st.reply is not None:
            self._schedule_push(st)

    def _schedule_push(self, st: JobState) -> None:
        assert st.reply is not None and st.pull_end is not None
        if st.failure is not None:
            at = st.pull_end + self.compute_lb.get(st.job.cid, 0.0)
            self._schedule(at, st.job.cid, JobFailed(st))
            return
        cid, r = st.job.cid, st.reply
        at = push_start(
            cid,
            st.job.index,
            st.pull_end,
            r.compute_s,
            r.delay_s,
            self.compute_lb.get(cid, 0.0),
            self.clock.now(),
        )
        row = self.events.job(st.job.cid, st.job.index)
        row.update(train_end=st.pull_end + st.reply.compute_s, delay=st.reply.delay_s)
        self._schedule(at, st.job.cid, PushStart(st))

    def _start_push(self, t: float, event: PushStart) -> None:
        st = event.state
        if st.dead:
            return
        cid = st.job.cid
        self.events.job(cid, st.job.index)["push_start"] = t
        st.push_fid = self.net.start_flow(
            t, self.model_bytes, push_links(cid), self.overhead, tag=cid
        )
        self.flows[st.push_fid] = PushDone(st)

    def _push_done(self, t: float, event: PushDone) -> None:
        st = event.state
        cid = st.job.cid
        self.events.job(cid, st.job.index)["push_end"] = t
        r = st.reply
        assert r is not None and r.weights is not None
        # The norm bound is state: checked here, in virtual-time order, never on receipt.
        rejected = self.admit_update(st.job, r)
        if rejected is not None:
            self._fail(t, st, rejected)
            return
        del self.active[cid]
        upd = Update(
            cid=cid,
            weights=r.weights.astype(self.policy.weights.dtype, copy=False),
            num_examples=int(r.num_examples),
            tag=st.job.tag,
            loss=r.loss,
        )
        self.execute(t, self.policy.on_update(t, upd))
        self._unpark(t, cid)

    def _job_failed(self, t: float, event: JobFailed) -> None:
        self._fail(t, event.state, event.state.failure or "failed")

    def _fail(self, t: float, st: JobState, reason: str) -> None:
        cid = st.job.cid
        if st.dead or self.active.get(cid) is not st:
            return
        st.dead = True
        if not st.submitted:  # never reached the node: no reply will come
            self.unreplied.pop((cid, st.job.index), None)
            self.deferred.pop(cid, None)
        for fid in (st.pull_fid, st.push_fid):
            if fid is not None and fid in self.flows:
                self.net.cancel_flow(fid)
                del self.flows[fid]
        del self.active[cid]
        self.events.job(cid, st.job.index)["failed"] = reason
        self.fail_job(t, st.job, reason)  # no verdict noted: it went offline
        self._unpark(t, cid)

    # -- availability ------------------------------------------------------------------
    def _schedule_dropout(self, now: float, st: JobState) -> None:
        if self.availability is None:
            return
        cid = st.job.cid
        pull = self.net.uncontended_time(self.model_bytes, pull_links(cid), self.overhead)
        push = self.net.uncontended_time(self.model_bytes, push_links(cid), self.overhead)
        # The nominal job window: uncontended transfers + compute lower bound.
        end = now + pull + self.compute_lb.get(cid, 0.0) + push
        cut = self.availability.interruption(self.seed, cid, st.job.index, now, end)
        if cut is not None:
            self._schedule(cut[0], cid, ClientOffline(st, cut[1]))

    def _offline(self, t: float, event: ClientOffline) -> None:
        st, back = event.state, event.back
        cid = st.job.cid
        self.offline_until[cid] = back
        self._schedule(back, cid, ClientOnline(cid))
        if self.active.get(cid) is st:
            self._fail(t, st, f"client offline until t={back:.3f}")

    def _online(self, t: float, event: ClientOnline) -> None:
        cid = event.cid
        if self.offline_until.get(cid, 0.0) <= t:
            self._unpark(t, cid)

    def _unpark(self, t: float, cid: int) -> None:
        if cid in self.parked and cid not in self.active and self.offline_until.get(cid, -1.0) <= t:
            weights, tag = self.parked.pop(cid)
            self.dispatch(t, cid, weights, tag)

"""Exact fast path of the fluid model: one processor-sharing or FCFS queue per hub link.

When every active flow crosses at most one link that other flows also use
(its *hub*) and its other links are used by it alone, max-min fairness
decouples into independent per-hub queues (:class:`HubQueue`):

* a fair hub with ``n`` flows whose private caps ``m_f`` (minimum capacity of
  the flow's other links) are all ``>= C / n`` gives each flow ``C / n``: an
  exact processor-sharing queue. If the caps are all equal to ``m < C / n``,
  every flow gets ``m``. Either way all flows of the hub move at one common
  rate ``r``, so a per-hub *virtual work* clock ``V`` (bytes served per flow,
  advancing at ``r``) and a finish tag ``V(join) + remaining`` per flow give
  completions off a heap in tag order: ``remaining = tag - V``;
* an FCFS hub moves only its head flow, at ``min(C, m_head)``; the others wait
  with their remaining bytes frozen.

A flow-set change therefore costs ``O(log n)``, not a water-filling over all
flows. Anything else (a flow crossing two shared links, mixed private caps that
bind below the fair share) sets :attr:`PSFastPath.broken`; :mod:`.engine` then
converts the state to the general solver (:mod:`.waterfill_state`) at that instant.

Performance: ``benchmarks/bench_emulation.py`` (flow churn, N = 100 and 1,000
flows) is the benchmark behind the loops written out inline below (``flush``,
``run`` and ``complete_at`` run on every event).
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable

import numpy as np

from .waterfill_state import BYTES_RTOL

# Module-level aliases: the hot paths below run once or more per event.
_heappush, _heappop, _INF = heapq.heappush, heapq.heappop, math.inf

Export = tuple[int, int, float, float, tuple[int, ...]]  # (seq, fid, size, remaining, links)


class _Flow:
    """An active flow (replaced, not mutated, once it has joined: clones share records)."""

    __slots__ = ("seq", "fid", "size", "links", "hub", "finish_tag", "queued_bytes", "private_cap")

    def __init__(self, seq: int, fid: int, size: float, links: tuple[int, ...]) -> None:
        self.seq, self.fid, self.size, self.links = seq, fid, size, links
        self.hub = 0
        self.finish_tag = 0.0  # fair hub only: virtual clock at join + bytes left then
        self.queued_bytes = 0.0  # fcfs hub only: bytes left, frozen while it waits
        self.private_cap = math.inf  # min capacity of its non-hub (private) links


class HubQueue:
    """The flows of one hub link: a processor-sharing clock (fair) or a FIFO queue (fcfs).

    All moving flows of the hub move at :attr:`rate`. Time is kept by
    :attr:`vclock` (fair) or :attr:`head_rem` (fcfs), valid at :attr:`t`.
    """

    __slots__ = (
        "hub", "cap", "fcfs", "t", "vclock", "head_rem", "rate", "order", "members",
        "cap_count", "cap_heap", "ver",
    )  # fmt: skip

    def __init__(self, hub: int, cap: float, fcfs: bool, t: float) -> None:
        self.hub, self.cap, self.fcfs, self.t = hub, cap, fcfs, t
        self.vclock = 0.0  # fair only: bytes served to each flow so far
        self.head_rem = 0.0  # fcfs only: bytes the head flow has left at t
        self.rate = 0.0  # rate of every moving flow of the hub
        # (finish tag, fid) if fair, (activation seq, fid) if fcfs; the top is the
        # next to finish. Entries of flows that left are skipped lazily.
        self.order: list[tuple[float, int]] = []
        self.members: dict[int, _Flow] = {}
        self.cap_count: dict[float, int] = {}  # private cap -> members with it (no zeros)
        self.cap_heap: list[float] = []  # private caps, lazy: smallest live one on top
        self.ver = 0  # bumped on every change: completion events of older versions are stale

    def settle(self, t: float) -> None:
        """Advance the virtual clock (fair) or the head's remaining bytes (fcfs) to ``t``."""
        if t > self.t:
            if self.fcfs:
                self.head_rem -= self.rate * (t - self.t)
            else:
                self.vclock += self.rate * (t - self.t)
            self.t = t

    def head(self) -> _Flow | None:
        """Fair: flow with the smallest finish tag; fcfs: earliest-activated member."""
        order = self.order
        while order and order[0][1] not in self.members:
            heapq.heappop(order)
        return self.members[order[0][1]] if order else None

    def remaining(self, f: _Flow) -> float:
        """Bytes ``f`` has left at :attr:`t`."""
        if not self.fcfs:
            return max(f.finish_tag - self.vclock, 0.0)
        return max(self.head_rem, 0.0) if f is self.head() else f.queued_bytes


class PSFastPath:
    """Active flows grouped by hub link; same stepping contract as
    :class:`.waterfill_state.WaterfillState`."""

    def __init__(self, cap: np.ndarray, fcfs: np.ndarray, t: float) -> None:
        self.cap, self.fcfs, self.t = cap, fcfs, t
        self.flows: dict[int, _Flow] = {}
        self.hubs: dict[int, HubQueue] = {}
        self.count: dict[int, int] = {}  # active flows per link
        self.owner: dict[int, int] = {}  # private link -> the flow using it
        self.events: list[tuple[float, int, int, int]] = []  # (finish, fid, ver, hub), lazy
        self.pending: list[tuple[float, int, float, tuple[int, ...]]] = []  # overhead phase
        self.seq = 0  # activation counter (fcfs order, export order)
        self.orphans: list[Export] = []  # flows that did not fit (state is then broken)
        self.broken = False
        self._ver = 0
        self._dirty: dict[int, HubQueue] = {}
        # (hub, links) -> min capacity of the non-hub links; capacities never change.
        self._private_caps: dict[tuple[int, tuple[int, ...]], float] = {}
        self.watched: list[int] = []
        #: Called as ``recorder(t, loads)`` with the loads of :attr:`watched` after changes.
        self.recorder: Callable[[float, np.ndarray], None] | None = None

    # -- joining and leaving -------------------------------------------------
    def join(self, seq: int, fid: int, size: float, rem: float, links: tuple[int, ...]) -> None:
        """Add an active flow with ``rem`` bytes left at :attr:`t` (activation order = ``seq``)."""
        count = self.count
        hub, shared = links[0], 0  # hub: the first link other flows use, if any
        for lk in links:
            if count.get(lk, 0):
                if not shared:
                    hub = lk
                shared += 1
        if shared > 1 or (shared and hub not in self.hubs and not self._rehome(hub)):
            self.orphans.append((seq, fid, size, rem, links))
            self.broken = True
            return
        f = _Flow(seq, fid, size, links)
        self.flows[fid] = f
        owner = self.owner
        for lk in links:
            count[lk] = count.get(lk, 0) + 1
            if lk != hub:
                owner[lk] = fid
        self._enter(f, hub, rem)

    def _rehome(self, link: int) -> bool:
        """Make private ``link`` a hub by moving its lone owner's queue there, if a singleton."""
        f = self.flows[self.owner[link]]
        g = self.hubs[f.hub]
        if len(g.members) != 1:
            return False
        g.settle(self.t)
        rem = g.remaining(f)
        del self.hubs[f.hub]
        self.owner[f.hub] = f.fid
        self.owner.pop(link, None)
        moved = _Flow(f.seq, f.fid, f.size, f.links)  # new object: clones share old ones
        self.flows[f.fid] = moved
        self._enter(moved, link, rem)
        return True

    def _enter(self, f: _Flow, hub: int, rem: float) -> None:
        t = self.t
        g = self.hubs.get(hub)
        if g is None:
            g = self.hubs[hub] = HubQueue(hub, float(self.cap[hub]), bool(self.fcfs[hub]), t)
        else:
            g.settle(t)
        f.hub = hub
        key = (hub, f.links)
        m = self._private_caps.get(key)
        if m is None:
            m = min((float(self.cap[lk]) for lk in f.links if lk != hub), default=_INF)
            self._private_caps[key] = m
        f.private_cap = m
        if g.fcfs:
            f.queued_bytes = rem
            if g.head() is None:  # an empty queue: f is the head at once
                g.head_rem = rem
            _heappush(g.order, (f.seq, f.fid))
        else:
            f.finish_tag = g.vclock + rem
            _heappush(g.order, (f.finish_tag, f.fid))
        g.members[f.fid] = f
        cap_count = g.cap_count
        k = cap_count.get(m, 0)
        if k == 0:
            _heappush(g.cap_heap, m)
        cap_count[m] = k + 1
        self._ver += 1  # g's event is stale until the next flush
        g.ver = self._ver
        self._dirty[hub] = g

    def leave(self, fid: int) -> None:
        """Remove active flow ``fid`` (completed or cancelled) at :attr:`t`."""
        f = self.flows.pop(fid)
        hub = f.hub
        g = self.hubs[hub]
        t = self.t
        if t > g.t:
            # g.settle(t) written out, the one inlined copy: leave() runs on every
            # completion and cancel. The saving is small: ~20 ns per call (timeit) of
            # ~9 us per flow-set change in benchmarks/bench_emulation.py's flow churn
            # (N = 1,000); measure there before inlining more.
            if g.fcfs:
                g.head_rem -= g.rate * (t - g.t)
            else:
                g.vclock += g.rate * (t - g.t)
            g.t = t
        was_head = g.fcfs and g.head() is f
        members = g.members
        del members[fid]
        cap_count = g.cap_count
        k = cap_count[f.private_cap] - 1
        if k:
            cap_count[f.private_cap] = k
        else:
            del cap_count[f.private_cap]
        count, owner = self.count, self.owner
        for lk in f.links:
            count[lk] -= 1
            if owner.get(lk) == fid:
                del owner[lk]
        if not members:
            del self.hubs[hub]
            return
        if was_head:  # the next in line starts with the bytes it had when it queued
            nxt = g.head()
            assert nxt is not None  # members is not empty
            g.head_rem = nxt.queued_bytes
        self._ver += 1  # g's event is stale until the next flush
        g.ver = self._ver
        self._dirty[hub] = g

    def flush(self) -> None:
        """New rates and completion events of the hubs changed since the last flush."""
        # Rates are recomputed once per hub per batch of changes at one instant;
        # until then the hub has no valid completion event (its ``ver`` moved on).
        dirty = self._dirty
        if not dirty:
            return
        hubs, events = self.hubs, self.events
        for hub, g in dirty.items():
            if hubs.get(hub) is not g:
                continue
            # The common rate of the hub's moving flows, then its head's finish
            # time; written out inline because this runs on every change.
            members, order = g.members, g.order
            while order[0][1] not in members:
                _heappop(order)
            head = members[order[0][1]]
            if g.fcfs:
                r = min(g.cap, head.private_cap)
                rem = g.head_rem
            else:
                share = g.cap / len(members)
                cap_heap, cap_count = g.cap_heap, g.cap_count
                while cap_heap[0] not in cap_count:  # lazy deletion
                    _heappop(cap_heap)
                m_min = cap_heap[0]
                if m_min >= share:
                    r = share
                elif len(cap_count) == 1:  # equal private caps all binding: everyone gets m
                    r = m_min
                else:
                    self.broken = True
                    continue
                rem = head.finish_tag - g.vclock
            g.rate = r
            _heappush(events, (g.t + max(rem, 0.0) / r, head.fid, g.ver, hub))
        dirty.clear()

    def clone(self) -> PSFastPath:
        """Independent copy for look-ahead (flow records are never mutated, only replaced)."""
        c = copy.copy(self)
        c.flows, c.count, c.owner = dict(self.flows), dict(self.count), dict(self.owner)
        c.events, c.pending, c.orphans = list(self.events), list(self.pending), list(self.orphans)
        c._dirty = {}  # always flushed between public calls
        c.hubs = {}
        for hub, g in self.hubs.items():
            h = c.hubs[hub] = copy.copy(g)
            h.order, h.members = list(g.order), dict(g.members)
            h.cap_count, h.cap_heap = dict(g.cap_count), list(g.cap_heap)
        c.recorder = None
        return c

    # -- time ----------------------------------------------------------------
    def run(self, to: float, first_only: bool = False) -> list[tuple[int, float]]:
        """Step to ``to`` (or the first completion); stop early, unfinished, if :attr:`broken`."""
        done: list[tuple[int, float]] = []
        pending, events, hubs = self.pending, self.events, self.hubs
        while not self.broken:
            while events:  # t_done = self.next_done()[0], inlined
                top = events[0]
                g = hubs.get(top[3])
                if g is not None and g.ver == top[2]:
                    break
                _heappop(events)
            t_done = events[0][0] if events else _INF
            t_next = min(t_done, pending[0][0] if pending else _INF)
            if t_next > to or t_next == _INF:
                break
            step = self.complete_at(t_next) if t_done <= t_next else []
            self.t = t_next
            while pending and pending[0][0] <= t_next:
                _, fid, size, links = _heappop(pending)
                if size > 0:
                    self.join(self.seq, fid, size, size, links)
                    self.seq += 1
                else:
                    step.append(fid)
            if len(step) > 1:
                step.sort()
            done += [(fid, t_next) for fid in step]
            self.flush()
            if self.watched and not self.broken:
                self.record()
            if first_only and done:
                return done
        if to != _INF and not self.broken and to > self.t:
            self.t = to
        return done

    def next_done(self) -> tuple[float, int]:
        """(earliest completion time, its flow id); ``(inf, -1)`` if nothing moves."""
        ev, hubs = self.events, self.hubs
        while ev:
            top = ev[0]
            g = hubs.get(top[3])
            if g is not None and g.ver == top[2]:
                return top[0], top[1]
            _heappop(ev)
        return _INF, -1

    def complete_at(self, t: float) -> list[int]:
        """Remove and return the flows finishing at ``t`` (the earliest completion time)."""
        self.t = t
        done: list[int] = []
        events, hubs = self.events, self.hubs
        while events:
            t_ev, _, ver, hub = events[0]
            g = hubs.get(hub)
            if g is None or g.ver != ver:  # stale: self.next_done(), inlined
                _heappop(events)
                continue
            if t_ev > t:
                break
            _heappop(events)
            head = g.head()
            assert head is not None  # a valid event belongs to a non-empty hub
            if g.fcfs:
                done.append(head.fid)
                self.leave(head.fid)
                continue
            g.settle(t)
            g.vclock = max(g.vclock, head.finish_tag)  # exact: the head finishes now
            order, members, vclock = g.order, g.members, g.vclock
            _heappop(order)  # the head's entry (head() cleaned the top)
            batch = [head.fid]
            while order:  # rounding dust: flows within BYTES_RTOL of done finish too
                tag, fid = order[0]
                f = members.get(fid)
                if f is not None and tag - vclock > BYTES_RTOL * f.size:
                    break
                _heappop(order)
                if f is not None:
                    batch.append(fid)
            for fid in batch:
                done.append(fid)
                self.leave(fid)
        return done

    def record(self) -> None:
        """Report the current loads of the watched links to :attr:`recorder`."""
        if self.recorder is None or not self.watched:
            return
        loads = np.zeros(len(self.watched))
        for col, lk in enumerate(self.watched):
            g = self.hubs.get(lk)
            if g is not None:
                loads[col] = g.rate if g.fcfs else g.rate * len(g.members)
            elif lk in self.owner:
                f = self.flows[self.owner[lk]]
                g = self.hubs[f.hub]
                loads[col] = g.rate if (not g.fcfs or g.head() is f) else 0.0
        self.recorder(self.t, loads)

    def export(self) -> list[Export]:
        """All active flows (orphans included) at :attr:`t`, in activation order."""
        out = list(self.orphans)
        for g in self.hubs.values():
            g.settle(self.t)
            out += [(f.seq, f.fid, f.size, g.remaining(f), f.links) for f in g.members.values()]
        out.sort()
        return out

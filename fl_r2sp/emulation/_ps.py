"""Exact fast path of the fluid model: one processor-sharing or FCFS queue per hub link.

When every active flow crosses at most one link that other flows also use
(its *hub*) and its other links are used by it alone, max-min fairness
decouples into independent per-hub queues:

* a fair hub with ``n`` flows whose private caps ``m_f`` (minimum capacity of
  the flow's other links) are all ``>= C / n`` gives each flow ``C / n``: an
  exact processor-sharing queue. If the caps are all equal to ``m < C / n``,
  every flow gets ``m``. Either way all flows of the hub move at one common
  rate ``r``, so a per-hub *virtual work* clock ``V`` (bytes served per flow,
  advancing at ``r``) and a finish tag ``V(join) + remaining`` per flow give
  completions off a heap in tag order: ``remaining = tag - V``;
* an FCFS hub moves only its head flow, at ``min(C, m_head)``.

A flow-set change therefore costs ``O(log n)``, not a water-filling over all
flows. Anything else (a flow crossing two shared links, mixed private caps that
bind below the fair share) sets :attr:`FastState.broken`; the caller then
converts the state to the general solver (:mod:`._fluid`) at that instant.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable

import numpy as np

from ._fluid import BYTES_RTOL

# Module-level aliases: the hot paths below run once or more per event.
_heappush, _heappop, _INF = heapq.heappush, heapq.heappop, math.inf

Export = tuple[int, int, float, float, tuple[int, ...]]  # (seq, fid, size, remaining, links)


class _Flow:
    __slots__ = ("seq", "fid", "size", "links", "hub", "val", "m")

    def __init__(self, seq: int, fid: int, size: float, links: tuple[int, ...]) -> None:
        self.seq, self.fid, self.size, self.links = seq, fid, size, links
        self.hub = 0
        self.val = 0.0  # fair hub: finish tag; fcfs hub: remaining bytes when it became head
        self.m = math.inf  # min capacity of its non-hub (private) links


class _Group:
    """The flows of one hub link: a PS clock (fair) or a FIFO queue (fcfs)."""

    __slots__ = ("hub", "cap", "fcfs", "t", "v", "r", "heap", "members", "mcount", "mheap", "ver")

    def __init__(self, hub: int, cap: float, fcfs: bool, t: float) -> None:
        self.hub, self.cap, self.fcfs, self.t = hub, cap, fcfs, t
        self.v = 0.0  # fair: virtual work clock; fcfs: head's remaining bytes at t
        self.r = 0.0  # rate of every moving flow of the group
        # (tag, fid) if fair, (activation seq, fid) if fcfs; entries of gone flows skipped lazily
        self.heap: list[tuple[float, int]] = []
        self.members: dict[int, _Flow] = {}
        self.mcount: dict[float, int] = {}
        self.mheap: list[float] = []
        self.ver = 0

    def settle(self, t: float) -> None:
        """Advance the clock (fair) or the head's remaining bytes (fcfs) to ``t``."""
        if t > self.t:
            self.v += (-self.r if self.fcfs else self.r) * (t - self.t)
            self.t = t

    def head(self) -> _Flow | None:
        """Fair: flow with the smallest tag; fcfs: earliest-activated member."""
        heap = self.heap
        while heap and heap[0][1] not in self.members:
            heapq.heappop(heap)
        return self.members[heap[0][1]] if heap else None

    def remaining(self, f: _Flow) -> float:
        """Bytes ``f`` has left at the group's time."""
        if not self.fcfs:
            return max(f.val - self.v, 0.0)
        return max(self.v, 0.0) if f is self.head() else f.val


class FastState:
    """Active flows grouped by hub link; same stepping contract as :class:`._fluid.FluidState`."""

    def __init__(self, cap: np.ndarray, fcfs: np.ndarray, t: float) -> None:
        self.cap, self.fcfs, self.t = cap, fcfs, t
        self.flows: dict[int, _Flow] = {}
        self.groups: dict[int, _Group] = {}
        self.count: dict[int, int] = {}  # active flows per link
        self.owner: dict[int, int] = {}  # private link -> the flow using it
        self.events: list[tuple[float, int, int, int]] = []  # (finish, fid, ver, hub), lazy
        self.pending: list[tuple[float, int, float, tuple[int, ...]]] = []  # overhead phase
        self.seq = 0  # activation counter (fcfs order, export order)
        self.orphans: list[Export] = []  # flows that did not fit (state is then broken)
        self.broken = False
        self._ver = 0
        self._dirty: dict[int, _Group] = {}
        # (hub, links) -> min capacity of the non-hub links; capacities never change.
        self._mcache: dict[tuple[int, tuple[int, ...]], float] = {}
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
        if shared > 1 or (shared and hub not in self.groups and not self._rehome(hub)):
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
        """Make private ``link`` a hub by moving its lone owner's group there, if a singleton."""
        f = self.flows[self.owner[link]]
        g = self.groups[f.hub]
        if len(g.members) != 1:
            return False
        g.settle(self.t)
        rem = g.remaining(f)
        del self.groups[f.hub]
        self.owner[f.hub] = f.fid
        self.owner.pop(link, None)
        moved = _Flow(f.seq, f.fid, f.size, f.links)  # new object: clones share old ones
        self.flows[f.fid] = moved
        self._enter(moved, link, rem)
        return True

    def _enter(self, f: _Flow, hub: int, rem: float) -> None:
        t = self.t
        g = self.groups.get(hub)
        if g is None:
            g = self.groups[hub] = _Group(hub, float(self.cap[hub]), bool(self.fcfs[hub]), t)
        elif t > g.t:  # g.settle(t), inlined
            g.v += (-g.r if g.fcfs else g.r) * (t - g.t)
            g.t = t
        f.hub = hub
        key = (hub, f.links)
        m = self._mcache.get(key)
        if m is None:
            m = self._mcache[key] = min((float(self.cap[lk]) for lk in f.links if lk != hub), default=_INF)
        f.m = m
        if g.fcfs:
            f.val = rem
            if g.head() is None:
                g.v = rem
            _heappush(g.heap, (f.seq, f.fid))
        else:
            f.val = g.v + rem
            _heappush(g.heap, (f.val, f.fid))
        g.members[f.fid] = f
        mcount = g.mcount
        k = mcount.get(m, 0)
        if k == 0:
            _heappush(g.mheap, m)
        mcount[m] = k + 1
        self._ver += 1  # g's event is stale until the next flush
        g.ver = self._ver
        self._dirty[hub] = g

    def leave(self, fid: int) -> None:
        """Remove active flow ``fid`` (completed or cancelled) at :attr:`t`."""
        f = self.flows.pop(fid)
        hub = f.hub
        g = self.groups[hub]
        t = self.t
        if t > g.t:  # g.settle(t), inlined
            g.v += (-g.r if g.fcfs else g.r) * (t - g.t)
            g.t = t
        was_head = g.fcfs and g.head() is f
        members = g.members
        del members[fid]
        mcount = g.mcount
        k = mcount[f.m] - 1
        if k:
            mcount[f.m] = k
        else:
            del mcount[f.m]
        count, owner = self.count, self.owner
        for lk in f.links:
            count[lk] -= 1
            if owner.get(lk) == fid:
                del owner[lk]
        if not members:
            del self.groups[hub]
            return
        if was_head:
            g.v = g.head().val  # type: ignore[union-attr]
        self._ver += 1  # g's event is stale until the next flush
        g.ver = self._ver
        self._dirty[hub] = g

    def flush(self) -> None:
        """New rates and completion events of the groups changed since the last flush."""
        # Rates are recomputed once per group per batch of changes at one instant;
        # until then the group has no valid completion event (its ``ver`` moved on).
        dirty = self._dirty
        if not dirty:
            return
        groups, events = self.groups, self.events
        for hub, g in dirty.items():
            if groups.get(hub) is not g:
                continue
            # The common rate of the group's moving flows, then its head's finish
            # time; written out inline because this runs on every change.
            members, heap = g.members, g.heap
            while heap[0][1] not in members:
                _heappop(heap)
            head = members[heap[0][1]]
            if g.fcfs:
                r = min(g.cap, head.m)
                rem = g.v
            else:
                share = g.cap / len(members)
                mheap, mcount = g.mheap, g.mcount
                while mheap[0] not in mcount:  # lazy deletion (mcount holds no zeros)
                    _heappop(mheap)
                m_min = mheap[0]
                if m_min >= share:
                    r = share
                elif len(g.mcount) == 1:  # equal private caps all binding: everyone gets m
                    r = m_min
                else:
                    self.broken = True
                    continue
                rem = head.val - g.v
            g.r = r
            _heappush(events, (g.t + max(rem, 0.0) / r, head.fid, g.ver, hub))
        dirty.clear()

    def clone(self) -> FastState:
        """Independent copy for look-ahead (flow records are never mutated, only replaced)."""
        c = copy.copy(self)
        c.flows, c.count, c.owner = dict(self.flows), dict(self.count), dict(self.owner)
        c.events, c.pending, c.orphans = list(self.events), list(self.pending), list(self.orphans)
        c._dirty = {}  # always flushed between public calls
        c.groups = {}
        for hub, g in self.groups.items():
            h = c.groups[hub] = copy.copy(g)
            h.heap, h.members, h.mcount, h.mheap = list(g.heap), dict(g.members), dict(g.mcount), list(g.mheap)
        c.recorder = None
        return c

    # -- time ----------------------------------------------------------------
    def run(self, to: float, first_only: bool = False) -> list[tuple[int, float]]:
        """Step to ``to`` (or the first completion); stop early, unfinished, if :attr:`broken`."""
        done: list[tuple[int, float]] = []
        pending, events, groups = self.pending, self.events, self.groups
        while not self.broken:
            while events:  # t_done = self.next_done()[0], inlined
                top = events[0]
                g = groups.get(top[3])
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
        ev, groups = self.events, self.groups
        while ev:
            top = ev[0]
            g = groups.get(top[3])
            if g is not None and g.ver == top[2]:
                return top[0], top[1]
            _heappop(ev)
        return _INF, -1

    def complete_at(self, t: float) -> list[int]:
        """Remove and return the flows finishing at ``t`` (the earliest completion time)."""
        self.t = t
        done: list[int] = []
        events, groups = self.events, self.groups
        while events:
            t_ev, _, ver, hub = events[0]
            g = groups.get(hub)
            if g is None or g.ver != ver:  # stale: self.next_done(), inlined
                _heappop(events)
                continue
            if t_ev > t:
                break
            _heappop(events)
            head = g.head()
            if t > g.t:  # g.settle(t), inlined
                g.v += (-g.r if g.fcfs else g.r) * (t - g.t)
                g.t = t
            if g.fcfs:
                done.append(head.fid)  # type: ignore[union-attr]
                self.leave(head.fid)  # type: ignore[union-attr]
                continue
            g.v = max(g.v, head.val)  # type: ignore[union-attr]  # exact: it finishes now
            heap, members, v = g.heap, g.members, g.v
            _heappop(heap)  # the head's entry (head() cleaned the top)
            batch = [head.fid]  # type: ignore[union-attr]
            while heap:  # rounding dust: flows within BYTES_RTOL of done finish too
                tag, fid = heap[0]
                f = members.get(fid)
                if f is not None and tag - v > BYTES_RTOL * f.size:
                    break
                _heappop(heap)
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
            g = self.groups.get(lk)
            if g is not None:
                loads[col] = g.r if g.fcfs else g.r * len(g.members)
            elif lk in self.owner:
                f = self.flows[self.owner[lk]]
                g = self.groups[f.hub]
                loads[col] = g.r if (not g.fcfs or g.head() is f) else 0.0
        self.recorder(self.t, loads)

    def export(self) -> list[Export]:
        """All active flows (orphans included) at :attr:`t`, in activation order."""
        out = list(self.orphans)
        for g in self.groups.values():
            g.settle(self.t)
            out += [(f.seq, f.fid, f.size, g.remaining(f), f.links) for f in g.members.values()]
        out.sort()
        return out

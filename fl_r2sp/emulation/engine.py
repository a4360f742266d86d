"""Flow state behind :class:`.network.Network`: fast per-hub queues, general solver fallback.

The state lives either in a :class:`.ps_fastpath.PSFastPath` (exact when each
flow has at most one shared link, see that module) or in a
:class:`.waterfill_state.WaterfillState` (max-min water-filling over all flows
on every change). A change the fast state cannot represent exactly converts it,
at that instant, to the general state (remaining bytes = finish tag - virtual
clock); the general state is offered back to the fast one after a growing
number of steps, so a topology that keeps breaking the fast path costs at most
a conversion per many events.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np

from .maxmin import PAD
from .ps_fastpath import PSFastPath
from .waterfill_state import WaterfillState

#: Steps in the general state before the first attempt to go back to the fast
#: state; doubled (up to :data:`RETRY_MAX`) after each fallback.
RETRY_MIN, RETRY_MAX = 8, 4096


class Engine:
    """Active and pending flows with exact completion times.

    Parameters
    ----------
    fast_path : bool
        Use the per-hub fast state when exact (True) or always the general
        water-filling solver (False).
    """

    def __init__(self, fast_path: bool) -> None:
        self.cap = np.array([np.inf])
        self.fcfs = np.array([False])
        self.fast_path = fast_path
        self.watched: list[int] = []
        self.rec_loads: Callable[[float, np.ndarray], None] | None = None
        self.rec_rates: Callable[[float, np.ndarray, np.ndarray], None] | None = None
        self.fast: PSFastPath | None = PSFastPath(self.cap, self.fcfs, 0.0) if fast_path else None
        self.general: WaterfillState | None = (
            None if fast_path else WaterfillState(self.cap, self.fcfs)
        )
        self._retry, self._steps = RETRY_MIN, 0

    # -- configuration -------------------------------------------------------
    def set_recorder(
        self,
        rates: Callable[[float, np.ndarray, np.ndarray], None],
        loads: Callable[[float, np.ndarray], None],
    ) -> None:
        """Hooks called after each change: with all rates (general) or watched loads (fast)."""
        self.rec_rates, self.rec_loads = rates, loads
        if self.general is not None:
            self.general.recorder = rates
        if self.fast is not None:
            self.fast.recorder = loads

    def add_link(self, capacity: float, fcfs: bool, watched: bool) -> None:
        """Append a link (its index is the new length - 1)."""
        self.cap = np.append(self.cap, capacity)
        self.fcfs = np.append(self.fcfs, fcfs)
        if watched:
            self.watched.append(self.cap.shape[0] - 1)
        for st in (self.fast, self.general):
            if st is not None:
                st.cap, st.fcfs = self.cap, self.fcfs
        if self.fast is not None:
            self.fast.watched, self.fast.recorder = self.watched, self.rec_loads

    @property
    def t(self) -> float:
        """Current time of the state."""
        return self.fast.t if self.fast is not None else self.general.t  # type: ignore[union-attr]

    @property
    def pending(self) -> list[tuple[float, int, float, tuple[int, ...]]]:
        return self.fast.pending if self.fast is not None else self.general.pending  # type: ignore[union-attr]

    def count(self) -> int:
        """Active plus pending flows."""
        if self.fast is not None:
            return len(self.fast.flows) + len(self.fast.orphans) + len(self.fast.pending)
        st = self.general
        return int(st.fid.shape[0]) + len(st.incoming) + len(st.pending)  # type: ignore[union-attr]

    # -- flow set changes ----------------------------------------------------
    def add_pending(self, act: float, fid: int, size: float, links: tuple[int, ...]) -> None:
        """Flow ``fid`` starts moving bytes at ``act`` (after its overhead)."""
        heapq.heappush(self.pending, (act, fid, size, links))

    def activate(self, fid: int, size: float, links: tuple[int, ...]) -> None:
        """Flow ``fid`` starts moving bytes now."""
        fast = self.fast
        if fast is None:
            self.general.activate([fid], [size], [links])  # type: ignore[union-attr]
            return
        fast.join(fast.seq, fid, size, size, links)
        fast.seq += 1
        fast.flush()  # self._settle_fast(), inlined: once per started flow
        if fast.broken:
            self._to_general()
        elif fast.watched:
            fast.record()

    def cancel(self, fid: int) -> None:
        """Remove an in-flight flow (pending or active) at the current time."""
        pend = self.pending
        for i, entry in enumerate(pend):
            if entry[1] == fid:
                pend.pop(i)
                heapq.heapify(pend)
                return
        fast = self.fast
        if fast is None:
            st = self.general
            st.flush()  # type: ignore[union-attr]
            st.remove(st.fid != fid)  # type: ignore[union-attr]
        elif fid in fast.flows:
            fast.leave(fid)
            self._settle_fast()
        else:  # an orphan: the state is broken already
            fast.orphans = [o for o in fast.orphans if o[1] != fid]
            self._settle_fast()

    def _settle_fast(self) -> None:
        self.fast.flush()  # type: ignore[union-attr]
        if self.fast.broken:  # type: ignore[union-attr]
            self._to_general()
        elif self.fast.watched:  # type: ignore[union-attr]
            self.fast.record()  # type: ignore[union-attr]

    # -- time ----------------------------------------------------------------
    def run(self, to: float, first_only: bool = False) -> list[tuple[int, float]]:
        """Step until ``to`` (or the first completion); return ``(fid, time)`` completions."""
        done: list[tuple[int, float]] = []
        if self.fast is not None:
            done = self.fast.run(to, first_only)
            if not self.fast.broken or (first_only and done):
                return done
            self._to_general()
        elif self.fast_path:
            self._steps += 1
            if self._steps >= self._retry and self._to_fast():
                return self.run(to, first_only)
        return done + self.general.run(to, first_only)  # type: ignore[union-attr]

    def next_completion(self) -> tuple[float, int] | None:
        """``(time, fid)`` of the first completion if nothing is added or cancelled."""
        fast = self.fast
        if fast is not None:
            t_done, fid = fast.next_done()
            t_act = fast.pending[0][0] if fast.pending else math.inf
            if t_done <= t_act and math.isfinite(t_done):
                return t_done, fid
        else:
            st = self.general
            t_done, t_act = st.next_times()  # type: ignore[union-attr]
            if t_done <= t_act and math.isfinite(t_done):
                return t_done, int(st.fid[st.finish <= t_done].min())  # type: ignore[union-attr]
        if not math.isfinite(t_act):
            return None
        first = self._clone().run(math.inf, first_only=True)
        return (first[0][1], first[0][0]) if first else None

    def _clone(self) -> Engine:
        twin = Engine.__new__(Engine)
        twin.__dict__.update(self.__dict__)
        twin.rec_loads = twin.rec_rates = None
        twin.fast_path = False  # a look-ahead never converts back
        twin.fast = self.fast.clone() if self.fast is not None else None
        twin.general = self.general.snapshot() if self.general is not None else None
        return twin

    # -- conversions ---------------------------------------------------------
    def _to_general(self) -> None:
        fast = self.fast
        assert fast is not None
        st = WaterfillState(self.cap, self.fcfs)
        st.t, st.pending, st.recorder = fast.t, fast.pending, self.rec_rates
        flows = fast.export()
        if flows:
            width = max(len(f[4]) for f in flows)
            st.links = np.full((len(flows), width), PAD, dtype=np.int64)
            for row, f in enumerate(flows):
                st.links[row, : len(f[4])] = f[4]
            st.fid = np.array([f[1] for f in flows], dtype=np.int64)
            st.size = np.array([f[2] for f in flows])
            st.rem = np.array([f[3] for f in flows])
            st.rate = np.zeros(len(flows))
            st.dirty = True
        self.general, self.fast = st, None
        self._steps, self._retry = 0, min(self._retry * 2, RETRY_MAX)

    def _to_fast(self) -> bool:
        st = self.general
        assert st is not None
        self._steps = 0
        st.progress(st.t)
        st.flush()
        fast = PSFastPath(self.cap, self.fcfs, st.t)
        for row in range(st.fid.shape[0]):
            links = tuple(int(lk) for lk in st.links[row] if lk != PAD)
            fast.join(row, int(st.fid[row]), float(st.size[row]), float(st.rem[row]), links)
            if fast.broken:
                return False
        fast.flush()
        if fast.broken:
            return False
        fast.seq, fast.pending = st.fid.shape[0], st.pending
        fast.watched, fast.recorder = self.watched, self.rec_loads
        self.fast, self.general = fast, None
        return True

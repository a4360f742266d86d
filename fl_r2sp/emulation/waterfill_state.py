"""General solver of the fluid network: max-min water-filling over all active flows.

The state the engine (:mod:`.engine`) falls back to when the processor-sharing
fast path (:mod:`.ps_fastpath`) is not exact: active flows as arrays, their
rates recomputed by :func:`.maxmin.waterfill` on every flow-set change, and
stepping in time. Kept separate from :mod:`.network` (names, records, queries)
so that a cheap copy can be stepped ahead for :meth:`Network.next_completion`
without touching the real state. Arrays are always *replaced*, never mutated in
place, so a shallow copy plus a copy of the pending heap is an independent snapshot.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable

import numpy as np

from .maxmin import PAD, waterfill

#: A flow whose remaining bytes are within this fraction of its size when
#: another flow completes is completed at the same instant (absorbs rounding
#: from ``remaining -= rate * dt``; shifts a completion by at most this
#: fraction of the flow's duration).
BYTES_RTOL = 1e-9


class WaterfillState:
    """Active flows in activation order, pending (overhead-phase) flows, current time.

    Parameters
    ----------
    cap_ext, fcfs_ext : numpy.ndarray
        Link capacities and first-come-first-served flags, index 0 = padding link.
    """

    def __init__(self, cap_ext: np.ndarray, fcfs_ext: np.ndarray) -> None:
        self.cap = cap_ext
        self.fcfs = fcfs_ext
        self.t = 0.0
        self.fid = np.zeros(0, dtype=np.int64)
        self.size = np.zeros(0)
        self.rem = np.zeros(0)
        self.rate = np.zeros(0)
        self.links = np.zeros((0, 1), dtype=np.int64)
        self.pending: list[tuple[float, int, float, tuple[int, ...]]] = []
        # Flows activated since the last flush, appended to the arrays in one go.
        self.incoming: list[tuple[int, float, tuple[int, ...]]] = []
        self.dirty = False
        self.t_done = math.inf  # earliest completion under current rates (valid if not dirty)
        self.finish = np.zeros(0)  # absolute finish time of each active row
        #: Called as ``recorder(t, links, rate)`` after each rate recomputation.
        self.recorder: Callable[[float, np.ndarray, np.ndarray], None] | None = None

    def snapshot(self) -> WaterfillState:
        """Independent copy (arrays are never mutated in place)."""
        clone = copy.copy(self)
        clone.pending = list(self.pending)
        clone.incoming = list(self.incoming)
        clone.recorder = None
        return clone

    # -- flow set changes ----------------------------------------------------
    def add_pending(self, act: float, fid: int, size: float, links: tuple[int, ...]) -> None:
        """Schedule a flow to start moving bytes at ``act`` (after its overhead)."""
        heapq.heappush(self.pending, (act, fid, size, links))

    def activate(self, fids: list[int], sizes: list[float], links: list[tuple[int, ...]]) -> None:
        """Append flows (in this order) to the active set at the current time."""
        self.incoming += zip(fids, sizes, links, strict=True)
        self.dirty = True

    def flush(self) -> None:
        """Move buffered activations into the arrays (one concatenation per batch)."""
        if not self.incoming:
            return
        fids, sizes, links = zip(*self.incoming, strict=True)
        self.incoming = []
        width = max(self.links.shape[1], max(len(lk) for lk in links))
        mat = np.full((len(links), width), PAD, dtype=np.int64)
        for row, lk in enumerate(links):
            mat[row, : len(lk)] = lk
        old = self.links
        if old.shape[1] < width:
            old = np.hstack([old, np.full((old.shape[0], width - old.shape[1]), PAD, np.int64)])
        self.links = np.vstack([old, mat])
        self.fid = np.concatenate([self.fid, np.asarray(fids, dtype=np.int64)])
        sz = np.asarray(sizes, dtype=float)
        self.size = np.concatenate([self.size, sz])
        self.rem = np.concatenate([self.rem, sz])
        self.rate = np.concatenate([self.rate, np.zeros(len(fids))])

    def remove(self, keep: np.ndarray) -> None:
        """Keep only the active rows where ``keep`` is True (after :meth:`flush`)."""
        self.fid, self.size = self.fid[keep], self.size[keep]
        self.rem, self.rate, self.links = self.rem[keep], self.rate[keep], self.links[keep]
        self.dirty = True

    # -- rates ---------------------------------------------------------------
    def eligible(self) -> np.ndarray | None:
        """Rows allowed to move bytes: on every fcfs link they cross, they are the
        earliest-activated active flow. ``None`` means all rows (no fcfs link in use)."""
        on_fcfs = self.fcfs[self.links]
        if not on_fcfs.any():
            return None
        rows, cols = np.nonzero(on_fcfs)  # row-major: rows ascending = activation order
        links = self.links[rows, cols]
        uniq, first = np.unique(links, return_index=True)
        head = np.full(self.cap.shape[0], -1, dtype=np.int64)
        head[uniq] = rows[first]
        ok = np.ones(self.fid.shape[0], dtype=bool)
        ok[rows[head[links] != rows]] = False
        return ok

    def recompute(self) -> None:
        """Max-min rates of the eligible flows (waiting fcfs flows get rate 0),
        each flow's absolute finish time and the earliest one."""
        self.flush()
        ok = self.eligible() if self.fcfs.any() else None
        if ok is None:
            self.rate = waterfill(self.links, self.cap)
            self.finish = self.t + self.rem / self.rate
        else:
            rate = np.zeros(self.fid.shape[0])
            rate[ok] = waterfill(self.links[ok], self.cap)
            self.rate = rate
            finish = np.full(rate.shape[0], np.inf)
            finish[ok] = self.t + self.rem[ok] / rate[ok]
            self.finish = finish
        self.t_done = float(self.finish.min()) if self.finish.shape[0] else math.inf
        self.dirty = False
        if self.recorder is not None:
            self.recorder(self.t, self.links, self.rate)

    # -- time ----------------------------------------------------------------
    def next_times(self) -> tuple[float, float]:
        """(earliest completion under current rates, earliest activation); inf if none."""
        if self.dirty:
            self.recompute()
        return self.t_done, (self.pending[0][0] if self.pending else math.inf)

    def step(self, t_next: float, t_done: float) -> list[tuple[int, float]]:
        """Move to ``t_next`` (<= next completion) and apply the changes due then.

        Returns the flows completed at ``t_next`` (zero-size activations included),
        ordered by flow id.
        """
        done: list[tuple[int, float]] = []
        self.progress(t_next)
        if t_done <= t_next:
            finished = self.rem <= BYTES_RTOL * self.size
            finished[np.argmin(self.finish)] = True  # it may keep rounding dust
            done = [(int(f), t_next) for f in self.fid[finished]]
            self.remove(~finished)
        while self.pending and self.pending[0][0] <= t_next:
            batch = []
            while self.pending and self.pending[0][0] <= t_next:
                batch.append(heapq.heappop(self.pending))
            moving = [b for b in batch if b[2] > 0]
            done += [(b[1], t_next) for b in batch if b[2] <= 0]
            if moving:
                self.activate(
                    [b[1] for b in moving], [b[2] for b in moving], [b[3] for b in moving]
                )
        done.sort(key=lambda item: item[0])
        return done

    def progress(self, to: float) -> None:
        """Move bytes at the current rates up to time ``to`` (no flow-set change)."""
        if to > self.t:
            if self.dirty:
                self.recompute()
            if self.fid.shape[0]:
                self.rem = np.maximum(self.rem - self.rate * (to - self.t), 0.0)
            self.t = to

    def run(self, to: float, first_only: bool = False) -> list[tuple[int, float]]:
        """Step until ``to`` (or the first completion if ``first_only``); return completions."""
        done: list[tuple[int, float]] = []
        while True:
            # At ``to`` exactly, only due activations can still act: skip a recompute.
            if (
                self.t == to
                and not (self.pending and self.pending[0][0] <= to)
                and (self.dirty or self.t_done > to)
            ):
                break
            t_done, t_act = self.next_times()
            t_next = min(t_done, t_act)
            if t_next > to or math.isinf(t_next):
                break
            done += self.step(t_next, t_done)
            if first_only and done:
                return done
        if math.isfinite(to):
            self.progress(to)
        return done

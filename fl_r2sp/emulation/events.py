"""Priority queue of timestamped events for the virtual-time run loop.

Ordering (the documented tie-break)
-----------------------------------
Events pop in increasing ``(time, priority, key, seq)``:

1. ``time``: virtual seconds.
2. ``priority``: smaller first; the caller assigns one integer per event kind
   so that, e.g., a completion at t is handled before a dispatch at t.
3. ``key``: normally the partition (client) id, so that simultaneous events of
   the same kind are handled in client order, never in insertion order (which
   could depend on the order real replies arrived).
4. ``seq``: a sequence number assigned by :meth:`EventQueue.push`, only to make
   the order total; with distinct keys it never decides anything.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Event:
    """One scheduled event; compares by ``(time, priority, key, seq)``."""

    time: float
    priority: int
    key: int
    seq: int
    payload: Any = field(compare=False, default=None)


_new_object = object.__new__


def _event(time: float, priority: int, key: int, seq: int, payload: Any) -> Event:
    # Same object as Event(...), without the frozen dataclass's five
    # object.__setattr__ calls: one event is pushed per job step of a run loop.
    event = _new_object(Event)
    event.__dict__.update(time=time, priority=priority, key=key, seq=seq, payload=payload)
    return event


class EventQueue:
    """Binary-heap event queue with lazy cancellation.

    Cancelled events stay in the heap until they reach the top, where they are
    discarded; this keeps ``cancel`` O(1) and ``pop`` amortised O(log n).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, int, Event]] = []
        self._next_seq = 0
        self._live: set[int] = set()
        self._cancelled: set[int] = set()

    def push(self, time: float, priority: int, key: int, payload: Any = None) -> int:
        """Schedule an event and return its sequence number.

        Raises
        ------
        ValueError
            If ``time`` is NaN or infinite.
        """
        if not math.isfinite(time):
            raise ValueError(f"event time must be finite, got {time!r}")
        seq = self._next_seq
        self._next_seq += 1
        time, priority, key = float(time), int(priority), int(key)
        heapq.heappush(
            self._heap, (time, priority, key, seq, _event(time, priority, key, seq, payload))
        )
        self._live.add(seq)
        return seq

    def cancel(self, seq: int) -> None:
        """Cancel a scheduled event by its sequence number (no-op if already popped)."""
        if seq in self._live:
            self._live.discard(seq)
            self._cancelled.add(seq)

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0][3] in self._cancelled:
            self._cancelled.discard(heapq.heappop(self._heap)[3])

    def peek(self) -> Event | None:
        """Return the next event without removing it, or ``None`` if empty."""
        if self._cancelled:
            self._drop_cancelled()
        return self._heap[0][4] if self._heap else None

    def pop(self) -> Event:
        """Remove and return the next event.

        Raises
        ------
        IndexError
            If the queue is empty.
        """
        if self._cancelled:
            self._drop_cancelled()
        if not self._heap:
            raise IndexError("pop from an empty EventQueue")
        event = heapq.heappop(self._heap)[4]
        self._live.discard(event.seq)
        return event

    def __len__(self) -> int:
        return len(self._live)

    def __bool__(self) -> bool:
        return self.peek() is not None

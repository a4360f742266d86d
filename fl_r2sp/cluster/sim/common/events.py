"""Typed events of the cluster twins, and the dispatch that refuses an unknown kind.

Every event a twin queues is a small frozen record (``sim/ps/events.py``,
``sim/reduce/events.py``) whose class attribute ``priority`` breaks ties between events due at
the same virtual time. The twin keeps a table from event type to handler and calls
:func:`dispatch`, which raises on a type the table lacks, so a new kind of event cannot fall
into another kind's branch silently (as :mod:`fl_r2sp.server.virtual_events` does for the
federated loop).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from fl_r2sp.emulation import EventQueue


class TwinEvent(Protocol):
    """What a twin's event record carries: its tie-break priority and its queue key."""

    priority: ClassVar[int]

    @property
    def key(self) -> int:
        """The queue's order among events of one priority at one time (worker or group)."""
        ...


#: Event type -> its handler.
Handlers = Mapping[type, Callable[[Any], None]]


def push(queue: EventQueue, time: float, event: TwinEvent) -> int:
    """Queue ``event`` at ``time`` (its priority and key order it); return its sequence."""
    return queue.push(time, event.priority, event.key, event)


def dispatch(handlers: Handlers, event: object) -> None:
    """Run the handler of ``event``'s type.

    Raises
    ------
    TypeError
        If ``handlers`` has none for it.
    """
    handler = handlers.get(type(event))
    if handler is None:
        known = ", ".join(sorted(k.__name__ for k in handlers))
        raise TypeError(f"twin has no handler for event {event!r} of type "
                        f"{type(event).__name__}; known types: {known}")  # fmt: skip
    handler(event)

"""The typed events of the cluster twins, and the dispatch that refuses an unknown kind.

Every event a twin queues is a small frozen record; :data:`PRIORITY` breaks ties between
events due at the same virtual time (lowest first), the key given to :func:`push` (a worker or
a group) between events of one priority:

====  ==========================  ===================================================
prio  parameter-server twin        all-reduce-family twin
====  ==========================  ===================================================
0                                  :class:`SyncDone` (a ring ended)
1     :class:`WorkerLost`          :class:`WorkerLost`
2     :class:`ComputeDone`         :class:`WorkerReady`
3     :class:`PermitDue`
4     :class:`TimerFired`          :class:`TimerFired`
====  ==========================  ===================================================

Flow completions come from the network model and go before all of them. A twin keeps a table
from event type to handler and calls :func:`dispatch`, which raises on a type the table lacks,
so a new kind of event cannot fall into another kind's branch silently (as
:mod:`fl_r2sp.fl.server.virtual_events` does for the federated loop).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fl_r2sp.cluster.policies.common.base import Permission
from fl_r2sp.emulation import EventQueue


@dataclass(frozen=True, slots=True)
class SyncDone:
    """All-reduce twin: the all-reduce of group ``group`` ended; its members start their next
    round (a member lost meanwhile leaves now)."""

    group: int


@dataclass(frozen=True, slots=True)
class WorkerLost:
    """Worker ``worker`` is lost (the spec's ``lost_at``)."""

    worker: int


@dataclass(frozen=True, slots=True)
class ComputeDone:
    """PS twin: worker ``worker`` finished computing.

    Its push to every shard starts now; the Request-to-Proceed follows when the last shard has
    received it.
    """

    worker: int


@dataclass(frozen=True, slots=True)
class WorkerReady:
    """All-reduce twin: worker ``worker`` finished a round's compute of ``compute_s`` s."""

    worker: int
    compute_s: float


@dataclass(frozen=True, slots=True)
class PermitDue:
    """PS twin: a permission the policy dated later (``permission.at``) is delivered."""

    permission: Permission


@dataclass(frozen=True, slots=True)
class TimerFired:
    """The policy's or controller's own deadline, set at ``due``.

    A reduce twin ignores a timer whose ``due`` is no longer the armed one (re-armed since).
    """

    due: float


#: Tie-break priority of each event type (lower first; see the module docstring).
PRIORITY: Mapping[type, int] = MappingProxyType({
    SyncDone: 0, WorkerLost: 1, ComputeDone: 2, WorkerReady: 2, PermitDue: 3, TimerFired: 4,
})  # fmt: skip

#: Event type -> its handler.
Handlers = Mapping[type, Callable[[Any], None]]


def push(queue: EventQueue, time: float, event: object, key: int = 0) -> int:
    """Queue ``event`` at ``time`` with its type's :data:`PRIORITY`; ``key`` (a worker or a
    group) orders events of one priority at one time. Returns the queue's sequence number.

    Raises
    ------
    KeyError
        If the event's type has no priority.
    """
    return queue.push(time, PRIORITY[type(event)], key, event)


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

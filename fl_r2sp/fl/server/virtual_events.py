"""What the virtual-time loop keeps per job and the typed events it processes.

Every event is a small frozen record; the loop dispatches on its type (a table
from type to handler) and raises on a type it has no handler for, so a new
kind of event cannot be dropped silently. Flow completions (:class:`PullDone`,
:class:`PushDone`) come from the network model; the other events wait in the
loop's :class:`~fl_r2sp.emulation.events.EventQueue` and carry the priority
that breaks ties between events due at the same virtual time.

Tie-break of simultaneous events
--------------------------------
All transfers finishing at ``t`` are handled first (they do not enter the
queue); then the queued events in increasing priority, each priority in
client order (the queue's ``key``), timers in the order they were set:

1. :class:`PushStart` -- a job's compute and injected delay are over.
2. :class:`ClientOffline` -- a client goes offline (its job fails).
3. :class:`JobFailed` -- a job whose reply was an error or was rejected.
4. :class:`TimerFired` -- a policy timer.
5. :class:`ClientOnline` -- a client is back.

Why offline sits just before the failures. Offline events used to share the
failures' priority, so the two kinds interleaved by client id and then by
insertion order. A separate priority has to sit on one side of the failures,
and the order is unchanged on either side except for an offline event and a
live failure due at exactly the same time:

* for the *same* job, the offline event was always queued first (at dispatch,
  before the reply that turns into the failure), so it was handled first;
  "before" keeps that, "after" would flip it;
* for *different* clients, the old order followed the client ids; "before"
  changes it only when the failing client has the smaller id.

So "before" changes strictly fewer orders, and it matches the rule for pushes
(the state of the system at ``t`` -- transfers, pushes, availability -- is
settled before the policy reacts to failures and timers at ``t``). The
remaining case needs a dropout time equal to a failure time to the last bit.
Random dropout draws (``bernoulli``) practically never give one; a ``trace``
that has a client offline already at dispatch can (its offline event is at
the dispatch time), if that dispatch reacts to a failure at ``t`` while a
client with a smaller id than the dispatched one also fails at ``t``. The
experiments use no dropouts, so their results are unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from fl_r2sp.fl.protocol import Job, Reply

PRIO_PUSH_START = 1
PRIO_OFFLINE = 2
PRIO_FAIL = 3
PRIO_TIMER = 4
PRIO_ONLINE = 5


@dataclass
class JobState:
    """One job's progress in virtual time (mutable: filled in as the job goes).

    Attributes
    ----------
    job : Job
        The job sent to the client.
    dispatch : float
        Virtual time the pull started.
    pull_fid, push_fid : int or None (default: None)
        Network flow ids of the pull and the push, once started.
    pull_end : float or None (default: None)
        Virtual time the pull finished.
    reply : Reply or None (default: None)
        The client's real reply, once it arrived.
    failure : str or None (default: None)
        Why the reply cannot be aggregated (error, bad weights).
    dead : bool (default: False)
        Failed or cancelled: its reply is discarded.
    submitted : bool (default: False)
        Handed to the transport (a reply will come).
    sent : float (default: 0.0)
        Wall time of the real submission (for the job timeout).
    """

    job: Job
    dispatch: float
    pull_fid: int | None = None
    pull_end: float | None = None
    reply: Reply | None = None
    failure: str | None = None
    push_fid: int | None = None
    dead: bool = False
    submitted: bool = False
    sent: float = 0.0


@dataclass(frozen=True, slots=True)
class PullDone:
    """The model transfer of the job (``state``) to its client finished."""

    state: JobState


@dataclass(frozen=True, slots=True)
class PushDone:
    """The update transfer of the job (``state``) to the server finished."""

    state: JobState


@dataclass(frozen=True, slots=True)
class PushStart:
    """The job's (``state``) compute and injected delay are over: its push starts."""

    priority: ClassVar[int] = PRIO_PUSH_START
    state: JobState


@dataclass(frozen=True, slots=True)
class ClientOffline:
    """The job's (``state``) client goes offline until virtual time ``back``."""

    priority: ClassVar[int] = PRIO_OFFLINE
    state: JobState
    back: float


@dataclass(frozen=True, slots=True)
class JobFailed:
    """The job's (``state``) reply was an error or rejected (``state.failure`` says why)."""

    priority: ClassVar[int] = PRIO_FAIL
    state: JobState


@dataclass(frozen=True, slots=True)
class TimerFired:
    """The policy timer ``key`` is due."""

    priority: ClassVar[int] = PRIO_TIMER
    key: Hashable


@dataclass(frozen=True, slots=True)
class ClientOnline:
    """Client ``cid`` is back online."""

    priority: ClassVar[int] = PRIO_ONLINE
    cid: int


#: Events that wait in the event queue (flow completions come from the network).
QueuedEvent = PushStart | ClientOffline | JobFailed | TimerFired | ClientOnline
#: Every event the virtual loop handles.
VirtualEvent = PullDone | PushDone | QueuedEvent

"""How long the ServerApp waits for the objects of a reply it pulled.

Flower 1.42's ``HttpGrid.pull_messages`` takes each reply off the SuperLink (the SuperLink
deletes it there) and then pulls the reply's objects (its arrays), retrying an object not
uploaded yet with a backoff of 1 s doubling to 10 s for up to 2 h (``PULL_MAX_TIME``). A SuperNode
pushes a reply's message first and its objects after; when that upload never completes (the
SuperNode was stopped in between, or its ``push-object`` got an HTTP 500 while the
SuperLink's SQLite was locked, which the SuperNode does not retry), the pull ends only when
the SuperLink drops the objects with the expired object-push session
(``OBJECT_PUSH_SESSION_TTL_SECONDS``, 180 s). All that time the ServerApp's only thread is
inside that call: no other reply is handled, no lost node noticed, no node re-attached, no
timer fired. The chaos e2e run saw it in three runs of four on a loaded machine: 160-180 s
without any event after one such reply, so no global update came within the test's wait.

:func:`bounded_object_pulls` caps that wait at :data:`OBJECT_WAIT` (it ends at Flower's first
retry past it, so up to ~10 s later): then the reply becomes
Flower's own error message for it ("Reply message objects are unavailable ..."), which the
transport turns into a failed job that the loop re-sends (``docs/architecture.md`` §9), as
it would have after 180 s.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

from flwr.superlink.grid import http_grid

#: Seconds a pulled reply's objects may take to become available. A healthy upload follows
#: its message at once over loopback; a wait too short costs one re-sent job, one too long
#: stops the whole run for its length.
OBJECT_WAIT = 30.0


@contextmanager
def bounded_object_pulls(seconds: float | None = OBJECT_WAIT) -> Iterator[None]:
    """Within the block, ``HttpGrid.pull_messages`` waits at most ``seconds`` for a reply's
    objects (default :data:`OBJECT_WAIT`; None = Flower's own bound, 2 h, as after the block).

    Flower offers no setting for it: the bound is passed to the ``pull_objects`` function the
    grid module calls (keyword ``max_time``). Use it from one thread (the ServerApp's).
    """
    if seconds is None:
        yield
        return
    grid_module = vars(http_grid)  # the names HttpGrid.pull_messages looks up when it runs
    original = grid_module["pull_objects"]
    grid_module["pull_objects"] = functools.partial(original, max_time=seconds)
    try:
        yield
    finally:
        grid_module["pull_objects"] = original

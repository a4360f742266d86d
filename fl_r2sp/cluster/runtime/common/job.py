"""Joining a torch.distributed job: the rank numbers from the environment, and the watchdog.

Every family's rank entry (:mod:`fl_r2sp.cluster.runtime.ps.rank`,
:mod:`fl_r2sp.cluster.runtime.peer.rank`) reads ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK``
(set by torchrun or torch's elastic agent) unless given, and arms a watchdog that ends the
process :data:`WATCHDOG_GRACE_S` after the run's time limit whatever it is doing, so no rank
can outlive the run. Leaving (:func:`leave`): rank 0, which hosts the store, waits a bounded
time for the live others so that it does not tear the store down under them.
"""

from __future__ import annotations

import datetime
import os
import sys
import threading
from typing import Any

from fl_r2sp.cluster.runtime.common import protocol as P

#: Seconds past the run's time limit after which the watchdog ends a rank.
WATCHDOG_GRACE_S = 60.0
#: Seconds rank 0 waits for the live others' exit keys before it leaves anyway.
EXIT_WAIT_S = 10.0
#: Exit status of a rank ended by the watchdog, and of the one command on a run that reached
#: its time limit (as GNU ``timeout``).
EXIT_TIMEOUT = 124


def timeout_reason(limit_s: float) -> str:
    """The reason of a run that reached its ``--run-timeout`` (status ``timeout``)."""
    return f"the run reached its time limit (--run-timeout {limit_s:g} s) before it finished"


def watchdog(rank: int, limit_s: float) -> threading.Timer:
    """Start (and return) a daemon timer that exits the process with :data:`EXIT_TIMEOUT`
    after ``limit_s``."""

    def expire() -> None:
        print(f"[rank {rank}] run exceeded its time limit ({limit_s:.0f}s); exiting", flush=True,
              file=sys.stderr)  # fmt: skip
        os._exit(EXIT_TIMEOUT)

    timer = threading.Timer(limit_s, expire)
    timer.daemon = True
    timer.start()
    return timer


def env_int(name: str, given: int | None) -> int:
    """``given``, else the environment variable ``name`` as an int.

    Raises
    ------
    RuntimeError
        If neither is set.
    """
    if given is not None:
        return given
    if name not in os.environ:
        raise RuntimeError(f"{name} is not set: start ranks with torchrun or python -m "
                           "fl_r2sp.cluster")  # fmt: skip
    return int(os.environ[name])


def local_rank_of(given: int | None) -> int:
    """``given``, else ``LOCAL_RANK`` from the environment (0 when unset)."""
    return given if given is not None else int(os.environ.get("LOCAL_RANK", 0))


def leave(store: Any, rank: int, world: int, gone: set[int]) -> None:
    """Mark this rank as leaving; rank 0 (which hosts the store) waits for the live others
    (not those in ``gone``) at most :data:`EXIT_WAIT_S` seconds."""
    try:
        store.set(P.exit_key(rank), "1")
        if rank == 0:
            keys = [P.exit_key(r) for r in range(1, world) if r not in gone]
            store.wait(keys, datetime.timedelta(seconds=EXIT_WAIT_S))
    except Exception:  # a lost rank never sets its key; leaving anyway is the point
        pass

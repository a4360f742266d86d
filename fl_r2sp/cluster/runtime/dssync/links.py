"""Emulated rack network of the DS-Sync runtime: worker NICs and rack uplinks as FIFO links.

A link of rate r serves reservations first come, first served: a reservation of n bytes made
at time ``now`` finishes at ``end = max(now, next_free) + n / r`` and moves ``next_free`` to
``end``; the caller sleeps until ``end``. A worker's NIC has one user (its worker), so its
``next_free`` lives in the process (:class:`FifoLink`). A rack uplink is shared by the
processes of the rack, so its ``next_free`` lives in the job's store and is advanced by
compare-and-set (:class:`SharedFifoLink`); every process of one machine reads the same
monotonic clock (Linux ``CLOCK_MONOTONIC``), so their times compare. A chunk that crosses racks
reserves on both its NIC and its rack's uplink and waits for the later of the two ends (the
bottleneck of a pipelined path).

Only the sender side is charged: the traffic patterns used here (rings, pairwise exchange)
send as much as they receive on every link, so downlinks would bind at the same rate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

#: Store keys of the uplinks' next-free times.
UPLINK_PREFIX = "fl_r2sp/ds/uplink/"
#: Compare-and-set attempts before a reservation gives up (each loses only to another
#: process's successful reservation, so this bounds the contention, not the time).
CAS_TRIES = 1000
MB = 1_000_000


class FifoLink:
    """A link used by one process.

    Parameters
    ----------
    rate_bytes_s : float
        Rate in bytes per second (> 0).
    clock : Callable[[], float], default time.monotonic
        Seconds on a monotonic clock.
    """

    def __init__(self, rate_bytes_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(rate_bytes_s) and rate_bytes_s > 0):
            raise ValueError(f"rate_bytes_s must be > 0, got {rate_bytes_s!r}")
        self.rate, self.clock = float(rate_bytes_s), clock
        self.next_free = -math.inf
        self.bytes_taken = 0

    def reserve(self, nbytes: int) -> float:
        """Book ``nbytes``; return the clock time at which they have left."""
        end = max(self.clock(), self.next_free) + nbytes / self.rate
        self.next_free = end
        self.bytes_taken += nbytes
        return end


class SharedFifoLink:
    """A link shared by processes through the job's store (module docstring).

    Parameters
    ----------
    store : dist.Store
        A store client owned by the calling thread (``compare_set`` is atomic on the server).
    key : str
        Store key of this link's next-free time.
    rate_bytes_s : float
        Rate in bytes per second (> 0).
    clock : Callable[[], float], default time.monotonic
        Seconds on the machine-wide monotonic clock.
    """

    def __init__(self, store: Any, key: str, rate_bytes_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        if not (math.isfinite(rate_bytes_s) and rate_bytes_s > 0):
            raise ValueError(f"rate_bytes_s must be > 0, got {rate_bytes_s!r}")
        self.store, self.key, self.rate, self.clock = store, key, float(rate_bytes_s), clock
        self.bytes_taken = 0

    def reserve(self, nbytes: int) -> float:
        """Book ``nbytes``; return the clock time at which they have left.

        Raises
        ------
        RuntimeError
            If ``CAS_TRIES`` compare-and-set attempts all lost (never in practice).
        """
        seen = ""  # compare_set with "" creates the key when it does not exist yet
        if self.store.check([self.key]):
            seen = self.store.get(self.key).decode()
        for _ in range(CAS_TRIES):
            start = max(self.clock(), float(seen) if seen else -math.inf)
            want = repr(start + nbytes / self.rate)
            got = self.store.compare_set(self.key, seen, want).decode()
            if got == want:
                self.bytes_taken += nbytes
                return float(want)
            seen = got  # another process booked first: retry after its reservation
        raise RuntimeError(f"could not book {nbytes} bytes on {self.key} ({CAS_TRIES} tries)")


class WorkerLinks:
    """One worker's view of the network: its NIC and its rack's uplink (either may be None).

    Parameters
    ----------
    nic : FifoLink or None
        This worker's NIC (None = not capped).
    uplink : SharedFifoLink or None
        Its rack's uplink (None = not capped).
    sleep : Callable[[float], None], default time.sleep
        Sleeps the given seconds.
    """

    def __init__(self, nic: FifoLink | None, uplink: SharedFifoLink | None,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.nic, self.uplink, self.sleep = nic, uplink, sleep
        self.seconds_slept = 0.0

    def send(self, nbytes: int, crosses: bool) -> float:
        """Charge ``nbytes`` sent (on the uplink too if ``crosses``); sleep; return the wait."""
        ends = [link.reserve(nbytes) for link in (self.nic, self.uplink if crosses else None)
                if link is not None]  # fmt: skip
        if not ends:
            return 0.0
        clock = (self.nic or self.uplink).clock  # type: ignore[union-attr]
        wait = max(0.0, max(ends) - clock())
        if wait > 0:
            self.sleep(wait)
            self.seconds_slept += wait
        return wait


def worker_links(
    store: Any,
    rank: int,
    rack: int,
    nic_mb_s: Sequence[float],
    uplink_mb_s: Sequence[float],
    run_tag: str,
) -> WorkerLinks:
    """The links of worker ``rank`` in rack ``rack`` from the config's caps (0 = not capped).

    ``run_tag`` makes the uplink keys unique to the run (a store may outlive one run in tests).
    """
    nic = FifoLink(nic_mb_s[rank] * MB) if nic_mb_s and nic_mb_s[rank] > 0 else None
    up = None
    if uplink_mb_s and uplink_mb_s[rack] > 0:
        up = SharedFifoLink(store, f"{UPLINK_PREFIX}{run_tag}/{rack}", uplink_mb_s[rack] * MB)
    return WorkerLinks(nic, up)

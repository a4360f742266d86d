"""Small helpers shared by the policies: client lists, failure counting, records."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fl_r2sp.fl.policies.base import Record
from fl_r2sp.fl.policies.params import check_max_failures, check_max_rejections


def client_list(clients: int | Sequence[int]) -> tuple[int, ...]:
    """Normalise ``clients`` (a count ``N`` -> ids ``0..N-1``, or explicit ids).

    Raises
    ------
    ValueError
        If there are no clients, an id is negative or ids repeat.
    """
    ids = tuple(range(clients)) if isinstance(clients, int) else tuple(int(c) for c in clients)
    if not ids:
        raise ValueError("a policy needs at least one client; got none")
    if min(ids) < 0:
        raise ValueError(f"client ids are partition ids and must be >= 0, got {min(ids)}")
    if len(set(ids)) != len(ids):
        raise ValueError("client ids must be unique; got duplicates in " + repr(ids))
    return ids


def check_start_clients(expected: tuple[int, ...], given: Sequence[int]) -> None:
    """Raise ``ValueError`` unless ``given`` holds the same ids as the policy was built for."""
    if set(int(c) for c in given) != set(expected):
        raise ValueError(
            f"start() got clients {sorted(given)} but the policy was built for "
            f"{sorted(expected)}; build the policy with the clients of the run"
        )


def as_model(weights: np.ndarray) -> np.ndarray:
    """Copy ``weights`` into a fresh flat vector (the policy's own copy): float64 stays
    float64 (a float64 model aggregates in its own precision), anything else is float32.

    Raises
    ------
    ValueError
        If ``weights`` is not one-dimensional or holds non-finite values.
    """
    wide = np.asarray(weights).dtype == np.float64
    arr = np.array(weights, dtype=np.float64 if wide else np.float32, copy=True)
    if arr.ndim != 1:
        raise ValueError(
            f"weights must be a flat vector, got shape {arr.shape}; flatten the model first"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("initial weights contain NaN or infinite values")
    return arr


class FailureCounter:
    """Counts consecutive failed jobs and consecutive rejected updates per client.

    Parameters
    ----------
    max_failures : int
        A client is re-sent a model after each of its first ``max_failures``
        (>= 1) consecutive failures and dropped at the next one.
    max_rejections : int or None, default None
        A client whose last ``max_rejections + 1`` updates in a row were
        rejected by admission is dropped (>= 0; key ``max-rejections``).
        None: rejections are not counted here (the policy counts them as
        failures).
    """

    def __init__(self, max_failures: int, max_rejections: int | None = None) -> None:
        check_max_failures(max_failures)
        if max_rejections is not None:
            check_max_rejections(max_rejections)
        self.max_failures = int(max_failures)
        self.max_rejections = max_rejections
        self._count: dict[int, int] = {}
        self._rejected: dict[int, int] = {}
        self.total = 0
        self.rejected_total = 0
        self.dropped: set[int] = set()

    def success(self, cid: int) -> None:
        """A job of ``cid`` brought an accepted update: both streaks restart."""
        self._count.pop(cid, None)
        self._rejected.pop(cid, None)

    def failure(self, cid: int) -> bool:
        """Count a failure of ``cid``; True iff it must be dropped now."""
        self.total += 1
        self._count[cid] = self._count.get(cid, 0) + 1
        if self._count[cid] > self.max_failures:
            self.dropped.add(cid)
            return True
        return False

    def rejection(self, cid: int) -> bool:
        """Count a rejected update of ``cid``; True iff it must be dropped now.

        The client answered, so its failure streak restarts.
        """
        if self.max_rejections is None:
            raise ValueError("this counter was built without max_rejections")
        self.rejected_total += 1
        self._count.pop(cid, None)
        self._rejected[cid] = self._rejected.get(cid, 0) + 1
        if self._rejected[cid] > self.max_rejections:
            self.dropped.add(cid)
            return True
        return False

    def revive(self, cid: int) -> bool:
        """Take a dropped ``cid`` back with clean counts; True iff it was dropped."""
        self._count.pop(cid, None)
        self._rejected.pop(cid, None)
        if cid not in self.dropped:
            return False
        self.dropped.discard(cid)
        return True

    def consecutive(self, cid: int) -> int:
        """Current number of consecutive failures of ``cid``."""
        return self._count.get(cid, 0)

    def consecutive_rejections(self, cid: int) -> int:
        """Current number of consecutive rejected updates of ``cid``."""
        return self._rejected.get(cid, 0)


def rejoined(now: float, cid: int, group: int | None, revived: bool) -> Record:
    """Telemetry row ``client_rejoin``: a lost client is reachable again."""
    return Record("client_rejoin", {"t": now, "cid": cid, "group": group, "revived": revived})


def ignored(now: float, cid: int, what: str, why: str) -> Record:
    """Telemetry row for an event the policy drops (e.g. a reply with no job in flight)."""
    return Record("ignored", {"t": now, "cid": cid, "what": what, "why": why})

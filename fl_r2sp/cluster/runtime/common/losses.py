"""Loss of a rank by evidence: the process exit the supervisor sees, published at once.

A rank that dies (SIGKILL, a crash, an ``os._exit``) is seen first by whoever started it: the
one-command supervisor (:mod:`fl_r2sp.cluster.local`) notices the exit within a tenth
of a second and sets :func:`exited_key` of that rank in the job's store (:class:`ExitPublisher`)
with ``{"rank", "name", "detail", "evidence": "process exit"}``. Every family reads those
keys where it waits for a peer:

* a rank blocked in a gloo operation with the dead rank stops waiting at once
  (:func:`wait_works` raises :class:`PeerGone`) and follows its scheme's rule;
* the rank that decides (the PS coordinator, the reduce controller, the DS-Sync lead) marks
  the worker lost at once instead of waiting out a timeout.

A rank that sees a connection to a peer close (a gloo error) may publish the same key with
evidence ``"closed connection"`` (first writer wins). Timeouts remain only for peers that
hang without dying; their loss is recorded with evidence ``"timeout"``.

The keys live in the job's raw TCPStore (below torch's ``default_pg`` prefixes), so the
supervisor, which is no member of the process group, can set them with a plain client.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLOSED",
    "EXIT",
    "TIMEOUT",
    "ExitBoard",
    "ExitPublisher",
    "PeerGone",
    "Watch",
    "closed_connection",
    "exited_key",
    "raw_store",
    "reason_of",
    "wait_works",
]

#: Evidence of a loss: the supervisor saw the process end.
EXIT = "process exit"
#: Evidence of a loss: a rank saw its connection to the peer close.
CLOSED = "closed connection"
#: Evidence of a loss: the peer stayed silent past a timeout (it may still be alive).
TIMEOUT = "timeout"
#: Seconds between two looks at the store while waiting on gloo work.
LOOK_S = 0.1
#: Seconds the supervisor's store client may take to connect or to set a key.
PUBLISH_TIMEOUT_S = 3.0
#: Words of gloo's errors when a peer's connection closed (the peer is gone).
_CLOSED_WORDS = ("connection closed", "connection reset", "broken pipe", "connection refused",
                 "end of file", "socket closed")  # fmt: skip


def exited_key(rank: int) -> str:
    """Set once rank ``rank`` is known to be gone (supervisor or a peer); JSON payload."""
    return f"fl_r2sp/exited/{rank}"


def raw_store(store: Any) -> Any:
    """The store below every ``PrefixStore`` of ``store`` (the job's TCPStore client)."""
    from torch.distributed import PrefixStore

    while isinstance(store, PrefixStore):
        store = store.underlying_store
    return store


def closed_connection(exc: BaseException) -> bool:
    """Whether gloo's error ``exc`` says a peer's connection closed."""
    text = str(exc).lower()
    return any(word in text for word in _CLOSED_WORDS)


class PeerGone(RuntimeError):
    """A peer this rank waited on is gone (its :func:`exited_key` is set, or a peer of the
    operation marked it broken); ``evidence`` says how that was known."""

    def __init__(self, message: str, evidence: str = EXIT) -> None:
        super().__init__(message)
        self.evidence = evidence


class ExitBoard:
    """A rank's view of :func:`exited_key` (one per thread: it owns a store client).

    Parameters
    ----------
    store : torch.distributed.Store
        A store client of the calling thread (any prefix; the raw store is used).
    name : callable
        ``name(rank) -> str`` for messages (``'worker 1 (rank 1)'``).
    """

    def __init__(self, store: Any, name: Callable[[int], str]) -> None:
        self.store, self.name = raw_store(store), name
        self.known: dict[int, dict[str, Any]] = {}

    def gone(self, ranks: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Of ``ranks``, those known to be gone, with their payloads."""
        for r in ranks:
            if r not in self.known and self.store.check([exited_key(r)]):
                self.known[r] = json.loads(self.store.get(exited_key(r)))
        return {r: self.known[r] for r in ranks if r in self.known}

    def first_gone(self, ranks: Iterable[int]) -> PeerGone | None:
        """A :class:`PeerGone` naming the lowest gone rank of ``ranks``, or None."""
        gone = self.gone(ranks)
        if not gone:
            return None
        r = min(gone)
        return PeerGone(reason_of(gone[r]), str(gone[r].get("evidence", EXIT)))

    def report_closed(self, rank: int, detail: str) -> None:
        """This rank saw its connection to ``rank`` close: publish it unless already known."""
        payload = {"rank": rank, "name": self.name(rank), "detail": detail, "evidence": CLOSED}
        with contextlib.suppress(Exception):  # the store may be going away with rank 0
            self.store.compare_set(exited_key(rank), "", json.dumps(payload))


def reason_of(payload: dict[str, Any]) -> str:
    """``'worker 1 (rank 1) was killed by signal 9 (process exit)'`` from a payload."""
    return f"{payload.get('name')} {payload.get('detail')} ({payload.get('evidence', EXIT)})"


class ExitPublisher:
    """The supervisor's side: set :func:`exited_key` of a rank whose process ended.

    Parameters
    ----------
    host, port : str, int
        The job's store (rank 0 hosts it); connected on first use.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._client: Any = None
        self.published: dict[int, str] = {}  # rank -> its reason
        self.unreachable = False

    def publish(self, rank: int, name: str, detail: str) -> bool:
        """Set rank ``rank``'s key (once); False if the store cannot be reached (rank 0 gone)."""
        if rank in self.published:
            return True
        if self.unreachable:  # one failed connection is enough: do not stall the supervisor
            return False
        payload = {"rank": rank, "name": name, "detail": detail, "evidence": EXIT}
        try:
            if self._client is None:
                from torch.distributed import TCPStore

                self._client = TCPStore(self.host, self.port, is_master=False,
                                        timeout=datetime.timedelta(seconds=PUBLISH_TIMEOUT_S),
                                        wait_for_workers=False)  # fmt: skip
            self._client.set(exited_key(rank), json.dumps(payload))
        except Exception:  # the store went down with rank 0: the supervisor handles that
            self.unreachable = True
            return False
        self.published[rank] = f"{name} {detail} ({EXIT})"
        return True


def wait_works(works: Sequence[Any], timeout_s: float, peers: Sequence[int],
               board: ExitBoard | None, broken: Callable[[], str | None] | None = None,
               owners: Sequence[int] | None = None) -> None:  # fmt: skip
    """Wait for gloo ``works`` as ``work.wait(timeout)`` would, but stop at once when one of
    ``peers`` is gone (``board``) or ``broken()`` names a reason (a peer of the operation gave
    up on it): the works are then abandoned. ``owners`` (point-to-point works: the peer of
    each) lets a work that failed on a closed connection publish its peer as gone
    (:meth:`ExitBoard.report_closed`), for the ranks that wait on it elsewhere.

    gloo offers no safe way to poll (a point-to-point work never reports completion before
    ``wait``, and a ``wait`` that times out closes the pair), so one daemon thread makes the
    blocking ``wait`` calls while this one looks at the store every :data:`LOOK_S`. An
    abandoned thread ends when gloo's own timeout fires; the process group it waits on must
    not be used again (callers mark the member set broken).

    Raises
    ------
    PeerGone
        A peer is gone or the operation was marked broken.
    RuntimeError
        From gloo, when an operation failed or ``timeout_s`` passed.
    """
    if not works:
        return
    done = threading.Event()
    failure: list[BaseException] = []
    at = [0]  # the work being waited on

    def wait_all() -> None:
        try:
            for at[0], work in enumerate(works):
                work.wait(datetime.timedelta(seconds=timeout_s))
        except BaseException as exc:  # handed to the caller
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=wait_all, name="gloo-wait", daemon=True).start()
    while not done.wait(LOOK_S):
        gone = board.first_gone(peers) if board is not None else None
        if gone is not None:
            raise gone
        why = broken() if broken is not None else None
        if why is not None:
            raise PeerGone(why, CLOSED)
    if failure:
        if owners is not None and board is not None and closed_connection(failure[0]):
            board.report_closed(owners[at[0]], str(failure[0]).splitlines()[0][:200])
        raise failure[0]


@dataclass(frozen=True)
class Watch:
    """What a synchronisation watches while it waits: its ``peers`` (global ranks) on the
    ``board``, and ``broken()`` (a reason once a peer of the operation gave up on it)."""

    peers: Sequence[int]
    board: ExitBoard | None
    broken: Callable[[], str | None] | None = None

    def wait(self, works: Sequence[Any], timeout_s: float,
             owners: Sequence[int] | None = None) -> None:  # fmt: skip
        """:func:`wait_works` on these peers (``owners``: the peer of each point-to-point work)."""
        wait_works(works, timeout_s, self.peers, self.board, self.broken, owners)

"""The other parameter servers' arrivals, streamed to rank 0's ``ps_updates.csv`` as they happen.

Rank 0 writes the run folder; PS 0's arrivals go to ``ps_updates.csv`` from its own threads.
A shard of rank s > 0 records its arrivals in its own process, so before this relay they
reached the file only with its end-of-run report, and a run whose PS s died (or that rank 0
ended early) had none of that shard's rows. Now each arrival at shard s is set as one store key
``arrivals/<s>/<seq>`` as it happens (:class:`ArrivalSender`), and a thread of rank 0
(:class:`ArrivalReceiver`) moves them into the writer in order. At a normal end rank 0 adds
whatever the shard's report holds beyond what was relayed (nothing, unless a key was lost).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from torch.distributed.distributed_c10d import Store

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import new_store

#: Seconds between two polls of the receiver (an arrival reaches the file this late at most).
POLL_S = 0.05


class ArrivalSender:
    """Shard ``shard``'s side: :meth:`send` sets one store key per arrival, in order.

    Parameters
    ----------
    shard : int
        The parameter server's index (its rank).
    store : Store or None, default None
        The control store (default: a new client of the job's store).
    """

    def __init__(self, shard: int, store: Store | None = None) -> None:
        self.shard, self.store = shard, store if store is not None else new_store()
        self.sent = 0
        self._lock = threading.Lock()  # arrivals come from one thread per worker

    def send(self, worker: int, iteration: int, t: float) -> None:
        """Relay one arrival (the ``on_arrival`` callback of the shard's server)."""
        with self._lock:
            self.store.set(
                P.arrival_key(self.shard, self.sent), P.dumps({"w": worker, "k": iteration, "t": t})
            )
            self.sent += 1


class ArrivalReceiver:
    """Rank 0's side: a thread that hands every relayed arrival of shards ``1 .. servers-1`` to
    ``write(shard, worker, iteration, t)`` in each shard's order.

    Parameters
    ----------
    servers : int
        Number of parameter servers (shard 0 is rank 0's own and not relayed).
    write : callable
        Called with ``(shard, worker, iteration, t)`` from the receiver's thread.
    store : Store or None, default None
        The control store (default: a new client of the job's store); used by one thread at a
        time (:meth:`finish` joins the polling thread first).
    """

    def __init__(
        self,
        servers: int,
        write: Callable[[int, int, int, float], None],
        store: Store | None = None,
    ) -> None:
        self.write, self.store = write, store if store is not None else new_store()
        self.received = {s: 0 for s in range(1, servers)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ps-arrival-relay", daemon=True)

    def start(self) -> ArrivalReceiver:
        """Start polling (nothing to do with a single parameter server)."""
        if self.received:
            self._thread.start()
        return self

    def finish(self, reports: list[dict[str, Any]]) -> None:
        """Stop polling, take what is left in the store, then each shard's report arrivals
        beyond those relayed (``reports``: the shards' end-of-run reports, shard 0's included)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._drain()
        for rep in reports:
            s = int(rep["shard"])
            if s in self.received:
                for w, k, t in rep["arrivals"][self.received[s] :]:
                    self.write(s, int(w), int(k), float(t))
                    self.received[s] += 1

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            self._drain()

    def _drain(self) -> None:
        store = self.store
        for s, seq in self.received.items():
            while store.check([P.arrival_key(s, seq)]):
                row = P.loads(store.get(P.arrival_key(s, seq)))
                store.delete_key(P.arrival_key(s, seq))
                self.write(s, int(row["w"]), int(row["k"]), float(row["t"]))
                seq += 1
                self.received[s] = seq

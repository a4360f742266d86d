"""What every rank knows about the run, and the control-plane helpers it uses.

The control plane is the job's TCPStore (the default process group's store, cloned so that
each thread has its own client: a client serialises its operations, so one blocking ``wait``
would stall every other call on it). Only ``set``/``get``/``check``/``wait``/``delete_key`` on
unique keys are used; every ``wait`` has a timeout.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch.distributed as dist
from torch.distributed.distributed_c10d import Store

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common import protocol as P


@dataclass(frozen=True)
class RankContext:
    """One rank's view of the run.

    Attributes
    ----------
    cfg : ClusterConfig
        The validated configuration.
    rank, world_size, local_rank : int
        As set by the launcher (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``).
    bounds : list of (int, int)
        Shard bounds over the flattened parameters.
    num_params : int
        Length of the flattened parameter vector.
    epoch : float
        Wall-clock time (``time.time()``) of the run's start, published by rank 0; telemetry
        times are seconds since then.
    run_dir : str
        The run directory (written by rank 0 only).
    """

    cfg: ClusterConfig
    rank: int
    world_size: int
    local_rank: int
    bounds: list[tuple[int, int]]
    num_params: int
    epoch: float
    run_dir: str

    @property
    def is_server(self) -> bool:
        """Ranks 0 .. S-1 are parameter servers."""
        return self.rank < self.cfg.servers

    @property
    def throttled(self) -> bool:
        """Whether ``--server-bandwidth`` caps the PS links."""
        return self.cfg.server_bandwidth_mb_s > 0

    def now(self) -> float:
        """Seconds since the run's epoch (the telemetry clock)."""
        return time.time() - self.epoch

    def describe(self, rank: int) -> str:
        """'worker w (rank r)' or 'parameter server s (rank r)' (:func:`.names.rank_name`:
        under OSP-C worker w is rank w)."""
        return names.rank_name(rank, self.world_size, self.cfg.workers)

    def rank_of(self, worker: int) -> int:
        """Global rank of worker ``worker`` (:func:`.names.rank_of_worker`)."""
        return names.rank_of_worker(worker, self.world_size, self.cfg.workers)


def new_store() -> Store:
    """A fresh client of the job's store (one per thread that blocks on it)."""
    return dist.distributed_c10d._get_default_store().clone()


def wait_get(store: Store, key: str, timeout_s: float, delete: bool = True) -> dict[str, Any]:
    """Wait up to ``timeout_s`` for ``key``, return its JSON value and (by default) delete it.

    Raises
    ------
    TimeoutError
        If the key is not set in time (the store's own error is chained).
    """
    try:
        store.wait([key], datetime.timedelta(seconds=timeout_s))
    except dist.DistStoreError as exc:
        if "timeout" not in str(exc).lower():
            raise
        raise TimeoutError(f"no {key!r} within {timeout_s:.0f}s") from exc
    value = P.loads(store.get(key))
    if delete:
        store.delete_key(key)
    return value


def set_json(store: Store, key: str, payload: dict[str, Any]) -> None:
    """Set ``key`` to the compact JSON of ``payload``."""
    store.set(key, P.dumps(payload))


def gather_live(
    store: Store, key_of: Callable[[int], str], peers: Iterable[int], timeout_s: float
) -> dict[int, dict[str, Any]]:
    """Wait for ``key_of(v)`` of every peer ``v`` not marked lost (:func:`P.lost_key`).

    Returns the values of the peers that set their key (read, not deleted). A peer counts as
    lost only if its key is still absent once its lost mark is seen; a value set before the
    peer died therefore counts for every reader alike (the peer set its key before it died,
    and the coordinator marks it after), so all readers gather the same set.

    Raises
    ------
    TimeoutError
        If a peer neither sets its key nor is marked lost within ``timeout_s`` (the message
        names the peers still missing).
    """
    waiting, got = set(peers), dict[int, dict[str, Any]]()
    end = time.monotonic() + timeout_s
    while waiting:
        for v in sorted(waiting):
            if store.check([key_of(v)]):
                got[v] = P.loads(store.get(key_of(v)))
                waiting.discard(v)
            elif store.check([P.lost_key(v)]):
                if store.check([key_of(v)]):  # set just before it died: it counts
                    got[v] = P.loads(store.get(key_of(v)))
                waiting.discard(v)
        if waiting and time.monotonic() > end:
            missing = ", ".join(f"worker {v}" for v in sorted(waiting))
            first = key_of(min(waiting))
            raise TimeoutError(f"no {first!r} from {missing} within {timeout_s:.0f}s")
        if waiting:
            time.sleep(0.02)
    return got

"""Dynamic subset all-reduce: process groups per member set, and the throttled weighted reduce.

Why not ``dist.new_group``: with ``use_local_synchronization=True`` the group's store prefix
depends on how many groups each member has created before, so members with different
histories rendezvous under different names and hang (docs/architecture.md, the
torch.distributed traps). Instead the members of a group build a ``ProcessGroupGloo``
themselves on ``PrefixStore(f"rg/{pg_id}/", store)``, where ``pg_id`` is
``"<sorted members>.<generation>"``: the member set names the group, the generation makes a
rebuilt group rendezvous under fresh keys.

Caching: a gloo group costs about 3 threads and 5 file descriptors until it is dropped, so
groups are kept per member set up to a bound. The bound must be applied identically by every
member (one member dropping a group another still uses would hang the next reduce), so the
*controller* decides: :class:`GroupRegistry` mirrors every worker's cache, evicts least
recently used groups, and tells each member in its assignment whether to build the group and
which groups to drop; :class:`SubgroupCache` (worker side) just obeys.
"""

from __future__ import annotations

import datetime
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import PrefixStore, Store

from fl_r2sp.cluster.runtime.common.losses import ExitBoard, wait_works
from fl_r2sp.cluster.runtime.common.throttle import TokenBucket, chunk_views


def set_key(members: Sequence[int]) -> str:
    """Canonical name of a member set: sorted ranks joined by '-' (``[3, 1] -> '1-3'``)."""
    if not members:
        raise ValueError("a group needs at least one member")
    return "-".join(str(r) for r in sorted(set(members)))


@dataclass(frozen=True)
class GroupPlan:
    """How the members of one launch get their process group.

    Attributes
    ----------
    pg_id : str
        ``"<set key>.<generation>"``.
    build : bool
        Every member builds it now (all together) rather than using its cached one.
    drops : dict of int to list of str
        Per member, group ids to drop (evicted or superseded) before building.
    ephemeral : bool
        Drop the group right after this reduce (no caching).
    """

    pg_id: str
    build: bool
    drops: dict[int, list[str]]
    ephemeral: bool = False


class GroupRegistry:
    """Controller-side mirror of every worker's group cache (see the module docstring).

    Parameters
    ----------
    capacity : int
        Groups each worker keeps (>= 1), or 0 for no cache (every reduce builds an ephemeral
        group).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self.current: dict[str, str] = {}  # set key -> pg_id of its current generation
        self.held: dict[int, OrderedDict[str, None]] = {}
        self.builds = 0
        self._generation = 0

    def plan(self, members: Sequence[int]) -> GroupPlan:
        """Plan the group of ``members`` (record the builds and evictions it implies)."""
        key = set_key(members)
        if self.capacity == 0:
            return GroupPlan(self._new_id(key), True, {}, ephemeral=True)
        cur = self.current.get(key)
        held = [self.held.setdefault(w, OrderedDict()) for w in members]
        if cur is not None and all(cur in h for h in held):
            for h in held:
                h.move_to_end(cur)
            return GroupPlan(cur, False, {})
        pg_id = self._new_id(key)
        self.current[key] = pg_id
        drops: dict[int, list[str]] = {}
        for w, h in zip(members, held, strict=True):
            out = []
            if cur is not None and cur in h:
                del h[cur]  # superseded by the new generation
                out.append(cur)
            while len(h) >= self.capacity:
                out.append(h.popitem(last=False)[0])
            h[pg_id] = None
            drops[int(w)] = out
        return GroupPlan(pg_id, True, drops)

    def invalidate(self, pg_id: str) -> None:
        """A reduce on ``pg_id`` failed: the next group of its member set is built afresh.

        Members keep the broken group until their LRU evicts it (bounded by the capacity).
        """
        key = pg_id.rsplit(".", 1)[0]
        if self.current.get(key) == pg_id:
            del self.current[key]

    def held_by(self, worker: int) -> list[str]:
        """Group ids ``worker`` holds, least recently used first."""
        return list(self.held.get(worker, {}))

    def _new_id(self, key: str) -> str:
        self._generation += 1
        self.builds += 1
        return f"{key}.{self._generation}"


class SubgroupCache:
    """A worker's process groups by group id; builds and drops exactly as told.

    Parameters
    ----------
    store : torch.distributed.Store
        The job's store (a client this worker's main thread owns).
    rank : int
        This rank in the default group.
    timeout_s : float
        Timeout of every built group's operations (creation rendezvous included).
    """

    def __init__(self, store: Store, rank: int, timeout_s: float) -> None:
        self.store, self.rank = store, rank
        self.timeout = datetime.timedelta(seconds=timeout_s)
        self.groups: dict[str, dist.ProcessGroupGloo] = {}
        # Groups whose operation was abandoned (a member died): never destroyed during the
        # run, because a group's destructor waits for its stuck operation (gloo's timeout).
        self.abandoned: list[dist.ProcessGroupGloo] = []
        self.built = 0

    def get(self, pg_id: str, members: Sequence[int], build: bool) -> dist.ProcessGroupGloo:
        """The group ``pg_id`` of ``members``; build it (collectively) if told to.

        Raises
        ------
        KeyError
            If told to reuse a group this worker does not hold (a protocol error).
        """
        if not build:
            return self.groups[pg_id]
        ranks = sorted(members)
        prefix = PrefixStore(f"rg/{pg_id}/", self.store)
        pg = dist.ProcessGroupGloo(prefix, ranks.index(self.rank), len(ranks), self.timeout)
        self.groups[pg_id] = pg
        self.built += 1
        return pg

    def drop(self, pg_ids: Sequence[str]) -> None:
        """Forget groups (dropping the last reference frees their threads and sockets)."""
        for pg_id in pg_ids:
            self.groups.pop(pg_id, None)

    def abandon(self, pg_id: str) -> None:
        """Stop using group ``pg_id`` (an operation on it was abandoned) without destroying it."""
        pg = self.groups.pop(pg_id, None)
        if pg is not None:
            self.abandoned.append(pg)

    def clear(self) -> None:
        """Drop every group (abandoned ones stay referenced)."""
        self.groups.clear()

    def __len__(self) -> int:
        return len(self.groups)


def ring_bytes(nbytes: int, members: int) -> int:
    """Bytes each member of a ring all-reduce of ``nbytes`` sends: 2(m − 1)/m · v."""
    if members < 1:
        raise ValueError(f"a ring needs >= 1 member, got {members}")
    return (2 * (members - 1) * nbytes) // members


def weighted_allreduce(
    flat: torch.Tensor,
    weight: float,
    pg: dist.ProcessGroupGloo | dist.ProcessGroup | None,
    bucket: TokenBucket | None = None,
    chunk_bytes: int = 256 * 1024,
    timeout_s: float = 300.0,
    members: Sequence[int] = (),
    board: ExitBoard | None = None,
) -> int:
    """Replace ``flat`` by the weighted sum over the group: every member passes its own weight.

    With weights summing to 1 over the members the result is their weighted mean. ``flat``
    is scaled by ``weight`` and all-reduced (sum) in place. With a ``bucket`` (this member's
    link) the reduce runs chunk by chunk and each chunk first charges the bucket with the
    member's ring traffic for it (:func:`ring_bytes`), so the collective moves at the pace of
    the slowest member's link. ``pg=None`` is a group of one (nothing is exchanged). With a
    ``board`` the wait stops as soon as one of ``members`` (global ranks) is known to be gone.

    Returns
    -------
    int
        Bytes charged as sent by this member.

    Raises
    ------
    ValueError
        On a non-contiguous or non-CPU tensor or a weight outside (0, 1].
    RuntimeError
        From gloo when a member fails or the timeout passes (``flat`` is then undefined).
    PeerGone
        A member is gone (``flat`` is then undefined; the group must not be used again).
    """
    if flat.device.type != "cpu" or not flat.is_contiguous() or flat.dim() != 1:
        raise ValueError("weighted_allreduce needs a contiguous 1-D CPU tensor")
    if not 0.0 < weight <= 1.0:
        raise ValueError(f"weight must lie in (0, 1], got {weight!r}")
    if pg is None or pg.size() == 1:
        return 0
    m = pg.size()
    flat.mul_(weight)
    pieces = [flat] if bucket is None else chunk_views(flat, chunk_bytes)
    charged = 0
    for piece in pieces:
        nbytes = ring_bytes(piece.numel() * piece.element_size(), m)
        if bucket is not None:
            bucket.take(nbytes)
        work = pg.allreduce([piece])  # type: ignore[union-attr]  # stubs omit it on Backend
        wait_works([work], timeout_s, members, board)
        charged += nbytes
    return charged

"""The three kinds of synchronisation of the DS-Sync runtime, throttled by the rack network.

Every operation runs chunk by chunk: each chunk is first charged to the sender's links
(:class:`~.links.WorkerLinks`, uplink too where the traffic crosses racks), then handed
to gloo *asynchronously*; all chunks are waited for at the end (bounded by ``timeout_s``). So
the emulated transfer of chunk i+1 overlaps gloo's work on chunk i ("async per bucket").

Charges follow the cost model of the paper's Table II (ring in rank order within a group):

* :func:`group_average` (DS-Sync's groups, all-reduce BSP): each member sends 2(m − 1)/m of
  every chunk; its uplink is charged when its ring successor is in another rack;
* :func:`hierarchical_average`: intra-rack reduce to the leader and broadcast back, each
  (m − 1)/m of a chunk per member (the two halves of 2(G − 1)/G), and between them the
  leaders' ring all-reduce, 2(C − 1)/C across the uplinks; the three phases run in sequence;
* :func:`gossip_exchange`: a worker sends its whole model to one peer and receives one.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.runtime.common.losses import Watch
from fl_r2sp.cluster.runtime.common.throttle import chunk_views
from fl_r2sp.cluster.runtime.dssync.links import WorkerLinks
from fl_r2sp.cluster.runtime.peer.subgroups import ring_bytes

#: Gossip tags are taken modulo this (gloo tags are 32-bit ints).
TAG_SPACE = 2**30


def _pieces(flat: torch.Tensor, links: WorkerLinks, chunk_bytes: int) -> list[torch.Tensor]:
    if flat.device.type != "cpu" or not flat.is_contiguous() or flat.dim() != 1:
        raise ValueError("synchronisation needs a contiguous 1-D CPU tensor")
    capped = links.nic is not None or links.uplink is not None
    return chunk_views(flat, chunk_bytes) if capped else [flat]


def _wait(works: Sequence[Any], timeout_s: float, watch: Watch | None) -> None:
    """Wait for ``works``; with a ``watch``, stop as soon as a peer is known to be gone."""
    if watch is not None:
        watch.wait(works, timeout_s)
        return
    timeout = datetime.timedelta(seconds=timeout_s)
    for work in works:
        work.wait(timeout)


def successor_crosses(members: Sequence[int], rank: int, rack_of: Mapping[int, int]) -> bool:
    """Whether ``rank``'s successor in the ring of ``members`` (rank order) is in another rack."""
    ring = sorted(members)
    nxt = ring[(ring.index(rank) + 1) % len(ring)]
    return rack_of[nxt] != rack_of[rank]


def group_average(
    flat: torch.Tensor,
    members: Sequence[int],
    rank: int,
    pg: Any,
    links: WorkerLinks,
    rack_of: Mapping[int, int],
    chunk_bytes: int,
    timeout_s: float,
    watch: Watch | None = None,
) -> int:
    """Replace ``flat`` by the mean over ``members`` (``pg`` is their group; None for one).

    Returns the bytes charged as sent. Raises gloo's RuntimeError when a member fails or the
    timeout passes, and :class:`~fl_r2sp.cluster.runtime.common.losses.PeerGone` as soon as
    ``watch`` sees a member gone (``flat`` is then undefined: the caller restores it).
    """
    m = len(members)
    if m == 1:
        return 0
    crosses = successor_crosses(members, rank, rack_of)
    flat.mul_(1.0 / m)
    works, sent = [], 0
    for piece in _pieces(flat, links, chunk_bytes):
        nbytes = ring_bytes(piece.numel() * piece.element_size(), m)
        links.send(nbytes, crosses)
        works.append(pg.allreduce([piece]))
        sent += nbytes
    _wait(works, timeout_s, watch)
    return sent


def _half(piece: torch.Tensor, m: int) -> int:
    return ((m - 1) * piece.numel() * piece.element_size()) // m


def hierarchical_average(
    flat: torch.Tensor,
    rank: int,
    rack: Sequence[int],
    leaders: Sequence[int],
    rack_pg: Any,
    leader_pg: Any,
    links: WorkerLinks,
    num_workers: int,
    chunk_bytes: int,
    timeout_s: float,
    watch: Watch | None = None,
) -> int:
    """Replace ``flat`` by the mean over every live worker, rack by rack (module docstring).

    ``rack`` lists the live members of this rank's rack, its leader first; ``rack_pg`` is
    their group (None for a rack of one), ``leader_pg`` the leaders' group (None for one
    rack, and on non-leaders). Returns the bytes charged as sent.
    """
    m, leader = len(rack), rack[0]
    root = sorted(rack).index(leader)
    pieces = _pieces(flat, links, chunk_bytes)
    sent = 0
    if m > 1:
        works = []
        for piece in pieces:
            opts = dist.ReduceOptions()
            opts.rootRank, opts.reduceOp = root, dist.ReduceOp.SUM
            links.send(_half(piece, m), False)
            works.append(rack_pg.reduce([piece], opts))
            sent += _half(piece, m)
        _wait(works, timeout_s, watch)
    if rank == leader:
        c = len(leaders)
        if c > 1:
            works = []
            for piece in pieces:
                nbytes = ring_bytes(piece.numel() * piece.element_size(), c)
                links.send(nbytes, True)
                works.append(leader_pg.allreduce([piece]))
                sent += nbytes
            _wait(works, timeout_s, watch)
        flat.mul_(1.0 / num_workers)
    if m > 1:
        works = []
        for piece in pieces:
            bopts = dist.BroadcastOptions()
            bopts.rootRank = root
            links.send(_half(piece, m), False)
            works.append(rack_pg.broadcast([piece], bopts))
            sent += _half(piece, m)
        _wait(works, timeout_s, watch)
    return sent


def gossip_exchange(
    flat: torch.Tensor,
    buffer: torch.Tensor,
    rank: int,
    peers: tuple[int, int],
    links: WorkerLinks,
    rack_of: Mapping[int, int],
    chunk_bytes: int,
    timeout_s: float,
    watch: Watch | None = None,
    round_: int = 0,
) -> int:
    """Send ``flat`` to ``peers[0]``, receive ``peers[1]``'s model, average the two.

    Point-to-point on the default (world) group, one tag per chunk and round (``round_``, the
    iteration): a receive left posted by a failed exchange (a peer died) keeps its tag and
    must not swallow a later round's message, which gloo would otherwise hand it (measured:
    the next exchange between two live ranks then hangs). ``buffer`` is scratch of ``flat``'s
    shape. Returns the bytes charged as sent.
    """
    dst, src = peers
    if dst == rank:
        return 0
    crosses = rack_of[dst] != rack_of[rank]
    mine = _pieces(flat, links, chunk_bytes)
    theirs = chunk_views(buffer, chunk_bytes) if len(mine) > 1 else [buffer]
    works, sent = [], 0
    first = (round_ * len(mine)) % (TAG_SPACE - len(mine))
    for i, (out, into) in enumerate(zip(mine, theirs, strict=True)):
        tag = first + i
        works.append(dist.irecv(into, src, tag=tag))
        nbytes = out.numel() * out.element_size()
        links.send(nbytes, crosses)
        works.append(dist.isend(out, dst, tag=tag))
        sent += nbytes
    if watch is not None:  # a closed connection names its peer: publish it for the others
        watch.wait(works, timeout_s, [src, dst] * len(mine))
    else:
        _wait(works, timeout_s, None)
    flat.add_(buffer).mul_(0.5)
    return sent

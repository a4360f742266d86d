"""A worker's OSP exchanges with every shard: one stage's parts out, the stage's means back.

:meth:`OSPLinks.exchange` posts the header and payload of every remote shard at once
(``isend``), then the reply headers (``irecv``), waits, and only then posts the reply payloads,
whose size it knows from the GIB (a shard that answered ABORT sends none). A co-located shard
(OSP-C) is called in process through its :meth:`~fl_r2sp.cluster.runtime.osp.server.OSPServer.
handle`. Every wait is bounded by the process group's timeout; a failed transfer raises
:class:`~fl_r2sp.cluster.runtime.ps.links.ShardUnreachable` naming the shard.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.osp import wire as W
from fl_r2sp.cluster.runtime.ps.links import ShardUnreachable, pieces


def _wait(works: list[tuple[int, Any]]) -> None:
    failed: ShardUnreachable | None = None
    for shard, work in works:
        try:
            if work is None:
                raise RuntimeError("point-to-point operation was not posted")
            work.wait()
        except Exception as exc:  # gloo reports a dead peer as RuntimeError
            failed = failed or ShardUnreachable(shard, exc)
    if failed is not None:
        raise failed


class OSPLinks:
    """OSP transfers of worker ``worker`` (see the module docstring).

    Parameters
    ----------
    worker : int
        Worker index.
    servers : int
        Number of shards S (shard s is rank s).
    throttled : bool
        Whether the PS links are capped (payloads then travel in ``chunk_kb`` chunks).
    chunk_kb : int
        Chunk size of throttled transfers in KiB.
    local : dict
        ``{shard: server}`` of co-located shards (OSP-C), called in process.
    """

    def __init__(
        self,
        worker: int,
        servers: int,
        throttled: bool,
        chunk_kb: int,
        local: dict[int, Any] | None = None,
    ) -> None:
        self.worker, self.servers = worker, servers
        self.throttled, self.chunk_kb = throttled, chunk_kb
        self.local = dict(local or {})
        self.remote = [s for s in range(servers) if s not in self.local]
        self._hdr = {st: [torch.zeros(W.HEADER) for _ in range(servers)] for st in W.TAGS}
        self._reply = {st: [torch.zeros(W.HEADER) for _ in range(servers)] for st in W.TAGS}

    def _chunk(self, n: int) -> int:
        return P.chunk_bytes_for(n, self.throttled, self.chunk_kb)

    def exchange(
        self,
        stage: str,
        iteration: int,
        parts: list[torch.Tensor],
        batch: int,
        loss: float = math.nan,
        compute_s: float = 0.0,
    ) -> list[torch.Tensor] | None:
        """Send ``parts[s]`` to shard s; return the stage's means per shard (None: ABORT)."""
        tags, works = W.TAGS[stage], []
        for s in self.remote:
            hdr, part = self._hdr[stage][s], parts[s]
            W.encode(hdr, P.DATA, self.worker, iteration, part.numel(), batch, loss, compute_s)
            works.append((s, dist.isend(hdr, s, tag=tags.push)))
            for i, piece in enumerate(
                pieces(part, self._chunk(part.numel())) if part.numel() else []
            ):
                tag = tags.payload if i == 0 else tags.payload_rest
                works.append((s, dist.isend(piece, s, tag=tag)))
            works.append((s, dist.irecv(self._reply[stage][s], s, tag=tags.reply)))
        outs: list[torch.Tensor | None] = [None] * self.servers
        for s, server in self.local.items():  # in process, while the remote sends proceed
            outs[s] = server.handle(stage, self.worker, iteration, parts[s], loss, compute_s)
        _wait(works)
        data = [s for s in self.remote if W.decode(self._reply[stage][s])[0] == P.DATA]
        works = []
        for s in data:  # also after an ABORT elsewhere: a shard that answered DATA sends
            out = outs[s] = torch.zeros(parts[s].numel())
            for i, piece in enumerate(pieces(out, self._chunk(out.numel())) if out.numel() else []):
                tag = tags.reply_payload if i == 0 else tags.reply_rest
                works.append((s, dist.irecv(piece, s, tag=tag)))
        _wait(works)
        if len(data) < len(self.remote) or any(outs[s] is None for s in self.local):
            return None
        return [o if o is not None else torch.zeros(0) for o in outs]

    def warm(self) -> None:
        """One WARM round trip with every remote shard (gloo connects on the first message)."""
        tags, works = W.TAGS["rs"], []
        for s in self.remote:
            W.encode(self._hdr["rs"][s], W.WARM, self.worker)
            works.append((s, dist.isend(self._hdr["rs"][s], s, tag=tags.push)))
            works.append((s, dist.irecv(self._reply["rs"][s], s, tag=tags.reply)))
        _wait(works)

    def bye(self) -> None:
        """End both stages' service threads at every remote shard."""
        works = []
        for stage, tags in W.TAGS.items():
            for s in self.remote:
                W.encode(self._hdr[stage][s], P.BYE, self.worker)
                works.append((s, dist.isend(self._hdr[stage][s], s, tag=tags.push)))
        _wait(works)

"""A worker's data-plane messages to and from every parameter-server shard.

Pushes and pulls go to all S shards at once (``isend``/``irecv`` posted together, then waited
on), as a worker of the paper pushes to every PS in parallel. Large messages are split into
the same chunks the PS side uses (:func:`fl_r2sp.cluster.runtime.common.throttle.chunk_sizes` over
float32 elements), so every receive posts exactly the size that arrives: the first chunk on
the first tag, the rest on the second, all from one source and matched in order (gloo keeps
the order of messages per peer and tag). Each ``wait`` is bounded by the process group's
timeout; a failed transfer raises :class:`ShardUnreachable` naming the parameter server, after
the transfers with the other shards have completed.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.throttle import chunk_sizes


def pieces(msg: torch.Tensor, chunk_bytes: int) -> list[torch.Tensor]:
    """Contiguous views of the 1-D float32 ``msg`` in the PS side's chunk layout."""
    elems = max(1, chunk_bytes // msg.element_size())
    views, start = [], 0
    for size in chunk_sizes(msg.numel(), elems):
        views.append(msg[start : start + size])
        start += size
    return views


class ShardUnreachable(RuntimeError):
    """A transfer with parameter server ``shard`` failed (its process died or timed out)."""

    def __init__(self, shard: int, cause: BaseException) -> None:
        text = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        super().__init__(f"parameter server {shard} (rank {shard}) unreachable: {text[:200]}")
        self.shard = shard


def _wait_all(works: list[tuple[int, dist.Work]]) -> None:
    """Wait for every posted transfer; then raise for the first shard that failed, if any."""
    failed: ShardUnreachable | None = None
    for shard, work in works:
        try:
            work.wait()
        except Exception as exc:  # gloo reports a dead peer as RuntimeError
            failed = failed or ShardUnreachable(shard, exc)
    if failed is not None:
        raise failed


def _posted(work: dist.Work | None) -> dist.Work:
    # isend/irecv return None only for ranks outside the group, which never happens here.
    if work is None:
        raise RuntimeError("point-to-point operation was not posted (rank outside the group)")
    return work


class WorkerLinks:
    """Fixed-size message buffers of one worker and the transfers that use them.

    Parameters
    ----------
    worker : int
        Worker index w (rank S + w).
    bounds : list of (int, int)
        Shard bounds over the flattened parameters (:func:`protocol.shard_bounds`).
    throttled : bool
        Whether the PS links are capped (messages then travel in ``chunk_kb`` chunks).
    chunk_kb : int
        Chunk size of throttled transfers in KiB.
    """

    def __init__(
        self, worker: int, bounds: list[tuple[int, int]], throttled: bool, chunk_kb: int
    ) -> None:
        self.worker = worker
        self.bounds = bounds
        self.push_msgs = [torch.zeros(P.HEADER + b - a) for a, b in bounds]
        self.pull_msgs = [torch.zeros(P.HEADER + b - a) for a, b in bounds]
        self.requests = [torch.zeros(P.HEADER) for _ in bounds]
        self.chunks = [P.chunk_bytes_for(m.numel(), throttled, chunk_kb) for m in self.push_msgs]

    def push(self, flat_grad: torch.Tensor, iteration: int, batch_size: int) -> None:
        """Send the gradient (1-D CPU float32 over all parameters) to every shard."""
        for s, (a, b) in enumerate(self.bounds):
            msg = self.push_msgs[s]
            P.encode_header(msg, P.DATA, self.worker, iteration, batch_size)
            msg[P.HEADER :].copy_(flat_grad[a:b])
        self._send_all(self.push_msgs, P.TAG_PUSH, P.TAG_PUSH_REST)

    def pull(self, flat_out: torch.Tensor, min_version: int, iteration: int) -> bool:
        """Fetch every shard into ``flat_out``; False if a shard answered ABORT."""
        works: list[tuple[int, dist.Work]] = []
        for s, req in enumerate(self.requests):
            P.encode_header(req, P.DATA, self.worker, min_version, iteration)
            works.append((s, _posted(dist.isend(req, s, tag=P.TAG_PULL_REQ))))
        for s, msg in enumerate(self.pull_msgs):
            for i, piece in enumerate(pieces(msg, self.chunks[s])):
                tag = P.TAG_PULL if i == 0 else P.TAG_PULL_REST
                works.append((s, _posted(dist.irecv(piece, s, tag=tag))))
        _wait_all(works)
        ok = True
        for s, (a, b) in enumerate(self.bounds):
            kind = P.decode_header(self.pull_msgs[s])[0]
            ok = ok and kind == P.DATA
            flat_out[a:b].copy_(self.pull_msgs[s][P.HEADER :])
        return ok

    def bye(self) -> None:
        """Tell every shard's push receiver and pull server that this worker is done."""
        works: list[tuple[int, dist.Work]] = []
        for s, req in enumerate(self.requests):
            P.encode_header(req, P.BYE, self.worker)
            works.append((s, _posted(dist.isend(req, s, tag=P.TAG_PULL_REQ))))
        for msg in self.push_msgs:
            P.encode_header(msg, P.BYE, self.worker)
        works += self._post_sends(self.push_msgs, P.TAG_PUSH, P.TAG_PUSH_REST)
        _wait_all(works)

    def _post_sends(
        self, msgs: list[torch.Tensor], first: int, rest: int
    ) -> list[tuple[int, dist.Work]]:
        works: list[tuple[int, dist.Work]] = []
        for s, msg in enumerate(msgs):
            for i, piece in enumerate(pieces(msg, self.chunks[s])):
                works.append((s, _posted(dist.isend(piece, s, tag=first if i == 0 else rest))))
        return works

    def _send_all(self, msgs: list[torch.Tensor], first: int, rest: int) -> None:
        _wait_all(self._post_sends(msgs, first, rest))

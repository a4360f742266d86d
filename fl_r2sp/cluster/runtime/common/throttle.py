"""Software bandwidth caps: a token bucket and chunked gloo point-to-point transfers.

``--server-bandwidth`` caps each parameter server's ingress and egress with one
:class:`TokenBucket` each. A transfer is split into fixed-size chunks (:func:`chunk_sizes`) and
the bucket is charged before each chunk moves. Because a gloo ``send`` is a rendezvous (it
returns only once the receiver has posted the matching ``recv``), pacing the *receiver* also
paces the sender, so a PS can cap both directions of its own link without cooperation from
the workers (measured within ~3 % of the cap when saturated; see docs/architecture.md, the
torch.distributed traps).

Message-size rule: gloo aborts the receiving process when a message is larger than the posted
buffer, so both sides derive the chunk sizes from the same ``(total, chunk)`` pair and every
receive posts exactly the size that will arrive. The first chunk travels on ``tag_first``
(the receiver may take it from any source), the rest on ``tag_rest`` from that same source.

Timeouts: every ``send``/``recv`` here is bounded by the process group's timeout (set when the
group is created); the bucket's sleeps are bounded by ``chunk / rate``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

#: Chunk size of throttled transfers; 64 KB and 256 KB follow the cap equally well.
DEFAULT_CHUNK_BYTES = 256 * 1024
#: Bytes in one MB of ``--server-bandwidth`` (network convention, 10^6).
MB = 1_000_000


class TokenBucket:
    """A thread-safe token bucket that sleeps callers off their deficit.

    Tokens (bytes) accrue at ``rate_bytes_per_s`` up to ``burst_bytes``; the bucket starts
    full. :meth:`take` withdraws ``nbytes`` at once, possibly going into debt, and sleeps
    until the debt would be repaid. Reservations are made under a lock and the sleep happens
    outside it, so concurrent callers queue behind each other's debt and the long-run rate
    over all callers never exceeds the cap by more than ``burst_bytes`` in total.

    Parameters
    ----------
    rate_bytes_per_s : float
        Cap in bytes per second; 0 or ``inf`` means unlimited (``take`` never sleeps).
    burst_bytes : int
        Bucket capacity in bytes (>= 0); one chunk is a good value.
    clock : Callable[[], float], default time.monotonic
        Seconds on a monotonic clock (inject a fake one in tests).
    sleep : Callable[[float], None], default time.sleep
        Sleeps the given seconds (inject a fake one in tests).
    """

    def __init__(
        self,
        rate_bytes_per_s: float,
        burst_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if math.isnan(rate_bytes_per_s) or rate_bytes_per_s < 0:
            raise ValueError(
                f"rate_bytes_per_s must be >= 0 (0 = unlimited), got {rate_bytes_per_s}"
            )
        if burst_bytes < 0:
            raise ValueError(f"burst_bytes must be >= 0, got {burst_bytes}")
        self.rate = float(rate_bytes_per_s)
        self.burst = int(burst_bytes)
        self.unlimited = self.rate == 0.0 or math.isinf(self.rate)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()
        self.bytes_taken = 0
        self.seconds_slept = 0.0

    @classmethod
    def from_mb_s(cls, mb_per_s: float, burst_bytes: int = DEFAULT_CHUNK_BYTES) -> TokenBucket:
        """A bucket capped at ``mb_per_s`` MB/s (1 MB = 10^6 bytes; 0 = unlimited)."""
        return cls(mb_per_s * MB, burst_bytes)

    def reserve(self, nbytes: int) -> float:
        """Withdraw ``nbytes`` now and return the seconds the caller must wait (no sleep)."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        with self._lock:
            self.bytes_taken += nbytes
            if self.unlimited:
                return 0.0
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= nbytes
            wait = max(0.0, -self._tokens / self.rate)
            self.seconds_slept += wait
            return wait

    def take(self, nbytes: int) -> float:
        """Withdraw ``nbytes``, sleep off the deficit, return the seconds slept."""
        wait = self.reserve(nbytes)
        if wait > 0.0:
            self._sleep(wait)
        return wait


def chunk_sizes(total: int, chunk: int) -> list[int]:
    """Sizes of the chunks of a ``total``-unit transfer: full ``chunk``s, then the remainder.

    ``chunk_sizes(10, 4) == [4, 4, 2]``; ``chunk_sizes(0, 4) == []``. Units are whatever the
    caller counts (bytes or elements); both ends of a transfer must use the same pair.
    """
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    full, rest = divmod(total, chunk)
    return [chunk] * full + ([rest] if rest else [])


def chunk_views(flat: torch.Tensor, chunk_bytes: int) -> list[torch.Tensor]:
    """Contiguous views of the 1-D ``flat`` in chunks of ``chunk_bytes`` (rounded down to whole
    elements, at least one): the layout both ends of a chunked transfer post."""
    elems = max(1, chunk_bytes // flat.element_size())
    views, start = [], 0
    for size in chunk_sizes(flat.numel(), elems):
        views.append(flat[start : start + size])
        start += size
    return views


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.device.type != "cpu" or not tensor.is_contiguous():
        raise ValueError("chunked transfers need a contiguous CPU tensor (gloo reads its memory)")
    return tensor.view(-1)


def send_chunked(
    tensor: torch.Tensor,
    dst: int,
    tag_first: int,
    tag_rest: int,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    bucket: TokenBucket | None = None,
    group: dist.ProcessGroup | None = None,
) -> float:
    """Send ``tensor`` to rank ``dst`` in chunks; return the seconds ``bucket`` made us wait.

    Parameters
    ----------
    tensor : torch.Tensor
        Contiguous CPU tensor; the receiver must post the same numel, dtype and chunk size.
    dst : int
        Destination rank (in the default group's numbering, as ``dist.send``).
    tag_first, tag_rest : int
        Tag of the first chunk and of the following ones.
    chunk_bytes : int, default 256 KiB
        Chunk size; the last chunk holds the remainder.
    bucket : TokenBucket or None, default None
        Charged before each chunk (the sender's egress cap); None: no cap here.
    group : ProcessGroup or None, default None
        Process group (None: the default group).
    """
    waited = 0.0
    for i, piece in enumerate(chunk_views(_flat(tensor), chunk_bytes)):
        if bucket is not None:
            waited += bucket.take(piece.numel() * piece.element_size())
        dist.send(piece, dst, group=group, tag=tag_first if i == 0 else tag_rest)
    return waited


def recv_chunked(
    out: torch.Tensor,
    tag_first: int,
    tag_rest: int,
    src: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    bucket: TokenBucket | None = None,
    group: dist.ProcessGroup | None = None,
) -> int:
    """Receive a :func:`send_chunked` transfer into ``out``; return the sender's rank.

    Parameters
    ----------
    out : torch.Tensor
        Contiguous CPU tensor with the sender's numel and dtype; overwritten.
    tag_first, tag_rest : int
        As in :func:`send_chunked`.
    src : int or None, default None
        Sender rank; None takes the first chunk from any source and the rest from it.
    chunk_bytes : int, default 256 KiB
        Must equal the sender's.
    bucket : TokenBucket or None, default None
        Charged before each chunk is received (the receiver's ingress cap; it also slows the
        sender, whose ``send`` waits for the matching ``recv``).
    group : ProcessGroup or None, default None
        Process group (None: the default group).
    """
    sender = src
    for i, piece in enumerate(chunk_views(_flat(out), chunk_bytes)):
        if bucket is not None:
            bucket.take(piece.numel() * piece.element_size())
        if i == 0:
            got = dist.recv(piece, src=sender, group=group, tag=tag_first)
            sender = got if sender is None else sender
        else:
            dist.recv(piece, src=sender, group=group, tag=tag_rest)
    if sender is None:
        raise ValueError("recv_chunked got an empty tensor and src=None: no sender to report")
    return sender

"""OSP's wire format on the PS runtime: tags, the 8-value header, and the GIB/importance keys.

One exchange per stage (RS or ICS), iteration and shard: the worker sends a fixed-size header
``[kind, worker, iteration, n, batch_size, loss, compute_s, 0]`` and, if ``n > 0``, the ``n``
gradient elements of the stage's layers in this shard (chunked like every throttled transfer);
the shard answers with a header ``[kind, worker, iteration, n, 0, ...]`` and, if the kind is
DATA and ``n > 0``, the ``n`` elements of the stage's mean gradient. A header of kind BYE ends
that stage's service thread; kind WARM is answered at once (gloo connects a pair of ranks on
its first message). The header comes first so that a receiver always posts the exact size
that arrives (gloo aborts on a larger message). Each stage has its own tags, so the ICS
exchange of a background thread and the RS exchange of the main thread never match each
other's messages.

Store keys: ``osp/gib/<j>`` (PS 0: the ICS layers of iteration j, read by every worker and
shard, never deleted during the run) and ``osp/imp/<s>/<j>`` (shard s's partial importance sums
of iteration j, read and deleted by PS 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fl_r2sp.cluster.config import HEADER_INT_LIMIT
from fl_r2sp.cluster.runtime.common import protocol as P

HEADER = 8
WARM = 3.0


@dataclass(frozen=True)
class StageTags:
    """Tags of one stage: request header, request payload (first, rest), reply likewise."""

    push: int
    payload: int
    payload_rest: int
    reply: int
    reply_payload: int
    reply_rest: int


TAGS: dict[str, StageTags] = {
    "rs": StageTags(31, 32, 33, 34, 35, 36),
    "ics": StageTags(41, 42, 43, 44, 45, 46),
}


def encode(
    out: torch.Tensor,
    kind: float,
    worker: int = 0,
    iteration: int = 0,
    n: int = 0,
    batch: int = 0,
    loss: float = math.nan,
    compute_s: float = 0.0,
) -> None:
    """Write an OSP header into ``out`` (integers must be < 2**24: float32 exact).

    Raises
    ------
    ValueError
        If an integer field does not fit.
    """
    ints = (worker, iteration, n, batch)
    if any(abs(v) >= HEADER_INT_LIMIT for v in ints):
        raise ValueError(f"OSP header integers {ints} must be < 2**24")
    out.copy_(torch.tensor([kind, *map(float, ints), loss, compute_s, 0.0]))


def decode(msg: torch.Tensor) -> tuple[float, int, int, int, int, float, float]:
    """``(kind, worker, iteration, n, batch, loss, compute_s)`` of a header."""
    h = msg[:HEADER].tolist()
    return float(h[0]), int(h[1]), int(h[2]), int(h[3]), int(h[4]), float(h[5]), float(h[6])


def gib_key(iteration: int) -> str:
    """ICS layers of ``iteration`` (``{"ics": [...], "budget": bytes, "epoch": e}``)."""
    return f"{P.PREFIX}osp/gib/{iteration}"


def importance_key(shard: int, iteration: int) -> str:
    """Shard ``shard``'s partial importance sums of ``iteration``."""
    return f"{P.PREFIX}osp/imp/{shard}/{iteration}"

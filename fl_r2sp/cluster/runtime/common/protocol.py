"""Wire format of the cluster runtime: ranks, shards, message headers, tags and store keys.

Ranks: ``0 .. S-1`` are parameter servers (PS ``s`` holds shard ``s``), ``S .. S+N-1`` are
workers (worker ``w`` is rank ``S + w``). The coordinator is a thread on rank 0.

Data plane (gloo point-to-point, CPU float32 tensors of a fixed size per tag, because gloo
aborts a process that receives a message larger than the posted buffer):

* **push** (worker -> PS ``s``): ``[kind, worker, iteration, batch_size] + gradient shard``,
  on tags :data:`TAG_PUSH` / :data:`TAG_PUSH_REST` (chunked when throttled);
* **pull request** (worker -> PS ``s``): ``[kind, worker, min_version, iteration]``, on
  :data:`TAG_PULL_REQ`; ``min_version`` is the number of barrier steps the shard must have
  applied before it answers (BSP; 0 otherwise);
* **pull reply** (PS ``s`` -> worker): ``[kind, version, updates_applied, 0] + parameter
  shard``, on :data:`TAG_PULL` / :data:`TAG_PULL_REST`;
* **final shard** (PS ``s`` > 0 -> PS 0 at the end): the bare shard on :data:`TAG_FINAL`.

Header integers travel as float32 and are exact below 2**24 (:func:`encode_header` checks).
``kind`` is :data:`DATA`, :data:`BYE` (the worker is done: the PS thread ends) or
:data:`ABORT` (a reply that carries no parameters: the run is ending on an error).

Control plane (TCPStore keys under :data:`PREFIX`, unique per event; ``set`` + ``wait`` +
``delete_key`` only, never the queue API, whose 2.14 client spuriously wakes later waits):
see the ``*_key`` helpers.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from fl_r2sp.cluster.config import HEADER_INT_LIMIT

HEADER = 4
DATA, BYE, ABORT = 1.0, 0.0, 2.0
TAG_PUSH, TAG_PUSH_REST = 11, 12
TAG_PULL_REQ = 13
TAG_PULL, TAG_PULL_REST = 14, 15
TAG_FINAL = 16
PREFIX = "fl_r2sp/"


def shard_bounds(num_params: int, servers: int) -> list[tuple[int, int]]:
    """Equal contiguous shards ``[(start, end), ...]`` of ``num_params`` over ``servers``.

    The first ``num_params % servers`` shards hold one element more, so sizes differ by at
    most one: ``shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]``.

    Raises
    ------
    ValueError
        If ``servers < 1`` or ``servers > num_params`` (a shard would be empty).
    """
    if servers < 1 or servers > num_params:
        raise ValueError(f"cannot split {num_params} parameters into {servers} non-empty shards")
    base, extra = divmod(num_params, servers)
    bounds, start = [], 0
    for s in range(servers):
        end = start + base + (1 if s < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def worker_rank(worker: int, servers: int) -> int:
    """Global rank of worker ``worker``."""
    return servers + worker


def encode_header(out: torch.Tensor, *values: float) -> None:
    """Write ``values`` (at most :data:`HEADER`) into the first slots of ``out``.

    Raises
    ------
    ValueError
        If a value is not exactly representable in float32 (|v| >= 2**24).
    """
    if len(values) > HEADER:
        raise ValueError(f"a header holds {HEADER} values, got {len(values)}")
    for i, v in enumerate(values):
        if abs(v) >= HEADER_INT_LIMIT:
            raise ValueError(f"header value {v} does not fit a float32 integer (< 2**24)")
        out[i] = float(v)
    for i in range(len(values), HEADER):
        out[i] = 0.0


def decode_header(msg: torch.Tensor) -> tuple[float, int, int, int]:
    """``(kind, a, b, c)`` of a message: the kind and three integers."""
    h = msg[:HEADER].tolist()
    return float(h[0]), int(h[1]), int(h[2]), int(h[3])


def chunk_bytes_for(numel: int, throttled: bool, chunk_kb: int) -> int:
    """Chunk size of a ``numel``-float32 message: whole when unthrottled, else ``chunk_kb``."""
    return max(4 * numel, 4) if not throttled else chunk_kb * 1024


# --- control-plane keys ----------------------------------------------------------------------
def request_key(worker: int, iteration: int) -> str:
    """Request-to-Proceed of ``worker`` after pushing ``iteration``."""
    return f"{PREFIX}req/{worker}/{iteration}"


def grant_key(worker: int, iteration: int) -> str:
    """Permission-to-Proceed (or stop) for ``worker`` to start ``iteration``."""
    return f"{PREFIX}grant/{worker}/{iteration}"


def verdict_key(worker: int, iteration: int) -> str:
    """Admission verdict on ``worker``'s push of ``iteration`` (``{"apply": bool}``).

    Set once by the coordinator (policies with ``admission``, i.e. SAFA) and read, not deleted,
    by every shard: all shards apply or drop that push by the same single decision.
    """
    return f"{PREFIX}verdict/{worker}/{iteration}"


def ready_key(worker: int) -> str:
    """Set by a worker once its model and data are loaded."""
    return f"{PREFIX}ready/{worker}"


def calibration_key(stage: str, worker: int) -> str:
    """Emulated compute's ``auto`` base cost: ``stage`` "up" (the worker is loaded and waits
    for the others) or "cost" (its calibrated per-sample cost). Read, not deleted, by every
    worker."""
    return f"{PREFIX}calib/{stage}/{worker}"


def lost_key(worker: int) -> str:
    """Set by the coordinator when ``worker`` is lost (its reason); read by the workers still
    waiting for it in a start-up handshake (the emulated compute's calibration)."""
    return f"{PREFIX}lost/{worker}"


def arrival_key(server: int, seq: int) -> str:
    """Arrival number ``seq`` at parameter server ``server`` > 0, relayed to rank 0 as it happens
    (:mod:`~fl_r2sp.cluster.runtime.ps.arrival_relay`)."""
    return f"{PREFIX}arrivals/{server}/{seq}"


def ps_report_key(server: int) -> str:
    """End-of-run statistics of PS ``server`` (JSON)."""
    return f"{PREFIX}ps/{server}"


def rank_key(rank: int) -> str:
    """Set by every rank as it joins: its role, pid and host (JSON), for ``run.json``."""
    return f"{PREFIX}rank/{rank}"


def exit_key(rank: int) -> str:
    """Set by every rank just before it leaves."""
    return f"{PREFIX}exit/{rank}"


STOP_KEY = f"{PREFIX}stop"
FATAL_KEY = f"{PREFIX}fatal"
EPOCH_KEY = f"{PREFIX}epoch"
EVAL_KEY = f"{PREFIX}eval"


def dumps(payload: dict[str, Any]) -> str:
    """Compact JSON of a control message (NaN allowed: a loss may be unknown)."""
    return json.dumps(payload, separators=(",", ":"))


def loads(raw: bytes | str) -> dict[str, Any]:
    """Inverse of :func:`dumps`."""
    data = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    if not isinstance(data, dict):
        raise ValueError(f"control message is not a JSON object: {data!r}")
    return data

"""The Flower Grid as a transport: push/pull messages, one in flight per node.

Node ids are random per run, so clients are addressed by the ``partition-id``
each node reports once, in answer to a ``query`` message sent at start
(simulation sets it; deployments pass ``--node-config "partition-id=i
num-partitions=N"`` to each SuperNode).

Message protocol (the project's ClientApp speaks it, and it is what Flower's
own ``FedAvg`` sends, so the same ClientApp serves both):

* train request: ``RecordDict({"arrays": ArrayRecord, "config": ConfigRecord})``
  with config keys ``job`` (per-client job index), ``tag`` and ``cid``;
* train reply: ``"arrays"`` and ``"metrics"`` (``num-examples``,
  ``train-loss``, ``compute-s``, ``delay-s``, ``partition-id``, ``job``, ``tag``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict
from flwr.common.constant import ErrorCode
from flwr.serverapp import Grid

from fl_r2sp.flower.records import arrays_of, number
from fl_r2sp.models.weights import flatten, unflatten
from fl_r2sp.protocol import Job, Reply
from fl_r2sp.server.virtual_checks import VirtualTimeError

log = logging.getLogger("fl_r2sp")

#: Seconds between two pulls while waiting (pulls are cheap: ~0.06 ms).
PULL_INTERVAL = 0.005
#: Flower error codes of messages lost to real time (TTL expired, node without heartbeat).
REAL_TIME_ERRORS = frozenset(
    {ErrorCode.MESSAGE_UNAVAILABLE, ErrorCode.REPLY_MESSAGE_UNAVAILABLE, ErrorCode.NODE_UNAVAILABLE}
)


def discover_partitions(
    grid: Grid,
    timeout: float = 120.0,
    expected: int = 0,
    wait_for_all: bool = False,
    allow_missing: bool = False,
) -> dict[int, int]:
    """Ask every node for its ``partition-id``; return {partition id: node id}.

    With ``wait_for_all``, waits up to ``timeout`` s for ``expected`` nodes
    to connect (deployments start SuperNodes one by one). If fewer than
    ``expected`` partitions answer within ``timeout`` s, that is an error
    unless ``allow_missing`` (run-config key ``allow-missing-nodes``): then the
    run goes on with those that answered, and a warning names the others.

    Raises
    ------
    ValueError
        If two nodes report the same partition id, or a node was told a
        ``num-partitions`` other than ``expected`` (the run would silently
        train on a fraction of the data).
    RuntimeError
        If partitions of ``0..expected-1`` are missing and not ``allow_missing``.
    """
    deadline = time.monotonic() + timeout
    nodes = list(grid.get_node_ids())
    while wait_for_all and len(nodes) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
        nodes = list(grid.get_node_ids())
    msgs = [
        Message(RecordDict({"config": ConfigRecord({"ask": "partition-id"})}), n, MessageType.QUERY)
        for n in nodes
    ]
    ids = list(grid.push_messages(msgs))
    found: dict[int, int] = {}
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for reply in grid.pull_messages(list(pending)):
            pending.discard(reply.metadata.reply_to_message_id)
            if reply.has_error():
                log.warning(
                    "node %d failed the partition query: %s",
                    reply.metadata.src_node_id,
                    reply.error.reason,
                )
                continue
            answer = reply.content["config"]
            pid = int(number(answer, "partition-id"))
            told = int(number(answer, "num-partitions", 0))
            if expected and told and told != expected:
                raise ValueError(
                    f"the nodes were started with num-partitions={told} but the run config "
                    f"says num-partitions={expected}: make them equal (in simulation pass "
                    f'--run-config "num-partitions={told}" or num-supernodes={expected})'
                )
            if pid in found:
                raise ValueError(
                    f"two nodes report partition-id={pid}: give each SuperNode its own"
                )
            found[pid] = reply.metadata.src_node_id
        time.sleep(PULL_INTERVAL)
    check_found(found, expected, allow_missing, len(nodes), timeout)
    return found


def check_found(
    found: dict[int, int], expected: int, allow_missing: bool, asked: int, timeout: float
) -> None:
    """Raise (or warn, with ``allow_missing``) if partitions ``0..expected-1`` are missing.

    Parameters
    ----------
    found : dict[int, int]
        {partition id: node id} of the nodes that answered.
    expected : int
        ``num-partitions`` (0 = unknown: nothing to check).
    allow_missing : bool
        Warn instead of raising (``allow-missing-nodes``).
    asked, timeout : int, float
        How many nodes were asked, and for how long (for the message).
    """
    missing = sorted(set(range(expected)) - set(found))
    if not missing:
        return
    shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
    text = (
        f"{len(found)} of num-partitions={expected} partitions answered the partition "
        f"query ({asked} nodes connected, {timeout:g} s); missing partition ids: {shown}"
    )
    if allow_missing:
        log.warning("%s; allow-missing-nodes=true: the run goes on without them", text)
        return
    raise RuntimeError(
        f"{text}. Start the missing SuperNodes (or num-supernodes={expected} in "
        "simulation), or set allow-missing-nodes=true to run without them"
    )


def mismatch(arrays: Sequence[np.ndarray], template: Sequence[np.ndarray]) -> str | None:
    """Why ``arrays`` do not fit the model ``template`` (count/shape/dtype), or None."""
    if len(arrays) != len(template):
        return f"{len(arrays)} arrays, expected {len(template)}"
    for i, (a, t) in enumerate(zip(arrays, template, strict=True)):
        if a.shape != t.shape:
            return f"array {i} has shape {a.shape}, expected {t.shape}"
        if a.dtype != t.dtype:
            return f"array {i} has dtype {a.dtype}, expected {t.dtype}"
    return None


def _count(value: object) -> int:
    """``num-examples`` as sent: an int when integral, else passed on as is.

    Admission (:mod:`fl_r2sp.server.admission`) rejects a non-integral or
    out-of-range count with its reason; truncating 2.5 to 2 here would hide it.
    """
    number = float(value)  # type: ignore[arg-type]
    return int(number) if number.is_integer() else number  # type: ignore[return-value]


class GridTransport:
    """Send jobs through a Flower ``Grid`` and collect replies.

    Parameters
    ----------
    grid : Grid
        The ServerApp's grid.
    template : Sequence[np.ndarray]
        The model's arrays (shapes/dtypes/order of the ArrayRecord to send).
    partitions : dict[int, int]
        {partition id: node id}, e.g. from :func:`discover_partitions`.
    ttl : float (default: 3600)
        Time-to-live of each message in seconds.
    virtual : bool (default: False)
        Virtual clock: a message lost to real time (Flower error codes
        :data:`REAL_TIME_ERRORS`: TTL expiry, a node without heartbeat) raises
        :class:`~fl_r2sp.server.virtual_checks.VirtualTimeError` instead of
        becoming an error reply, i.e. a failed job in virtual time.
    """

    def __init__(
        self,
        grid: Grid,
        template: Sequence[np.ndarray],
        partitions: dict[int, int],
        ttl: float = 3600.0,
        virtual: bool = False,
    ) -> None:
        self.grid = grid
        self.template = [np.asarray(a) for a in template]
        self.node_of = dict(partitions)
        self.ttl = ttl
        self.virtual = virtual
        self.inflight: dict[str, Job] = {}
        self._by_cid: dict[int, str] = {}

    def clients(self) -> list[int]:
        """Partition ids of the discovered nodes, sorted."""
        return sorted(self.node_of)

    def submit(self, job: Job) -> None:
        """Push a train message to the job's node."""
        if job.cid in self._by_cid:
            raise RuntimeError(f"client {job.cid} already has a message in flight")
        arrays = ArrayRecord(unflatten(job.weights, self.template))
        config = ConfigRecord({"job": job.index, "tag": job.tag, "cid": job.cid})
        msg = Message(
            RecordDict({"arrays": arrays, "config": config}),
            self.node_of[job.cid],
            MessageType.TRAIN,
            ttl=self.ttl,
        )
        (mid,) = list(self.grid.push_messages([msg]))
        self.inflight[mid] = job
        self._by_cid[job.cid] = mid

    def poll(self, timeout: float) -> list[Reply]:
        """Pull replies; wait up to ``timeout`` s for at least one."""
        deadline = time.monotonic() + timeout
        while self.inflight:
            converted = [self._convert(m) for m in self.grid.pull_messages(list(self.inflight))]
            got = [r for r in converted if r is not None]
            if got or time.monotonic() >= deadline:
                return got
            time.sleep(PULL_INTERVAL)
        return []

    def _convert(self, msg: Message) -> Reply | None:
        job = self.inflight.pop(msg.metadata.reply_to_message_id, None)
        if job is None:
            return None
        self._by_cid.pop(job.cid, None)
        if msg.has_error():
            if self.virtual and msg.error.code in REAL_TIME_ERRORS:
                raise VirtualTimeError(
                    f"client {job.cid} job {job.index}: the message was lost to real time "
                    f"({msg.error.reason}, Flower error code {msg.error.code}); under the virtual "
                    "clock that cannot become a failed job (virtual failures come only from the "
                    "dropout model), so the run stops: check the node, or raise job-timeout"
                )
            return Reply(
                job.cid, job.index, job.tag, None, error=f"client error: {msg.error.reason}"
            )
        try:
            metrics = msg.content["metrics"]
            arrays = arrays_of(msg.content)
            problem = mismatch(arrays, self.template)
            if problem is not None:
                return Reply(job.cid, job.index, job.tag, None, error=f"rejected update: {problem}")
            weights = flatten(arrays)
            return Reply(
                job.cid,
                job.index,
                job.tag,
                weights,
                num_examples=_count(metrics["num-examples"]),
                loss=float(number(metrics, "train-loss", float("nan"))),
                compute_s=float(number(metrics, "compute-s", 0.0)),
                delay_s=float(number(metrics, "delay-s", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as exc:  # malformed reply: reject, don't crash
            return Reply(job.cid, job.index, job.tag, None, error=f"malformed reply: {exc!r}")

    def forget(self, cid: int) -> None:
        """Stop waiting for ``cid``'s message (timed out)."""
        mid = self._by_cid.pop(cid, None)
        if mid is not None:
            self.inflight.pop(mid, None)

    def close(self) -> None:
        """Forget everything in flight (Flower discards late replies by TTL)."""
        self.inflight.clear()
        self._by_cid.clear()

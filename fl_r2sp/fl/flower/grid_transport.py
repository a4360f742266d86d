"""The Flower Grid as a transport: push/pull messages, one in flight per node.

Node ids are random per run, so clients are addressed by the ``partition-id``
each node reports once, in answer to a ``query`` message sent at start
(simulation sets it; deployments pass ``--node-config "partition-id=i
num-partitions=N"`` to each SuperNode).

A node without a query handler (a stock ClientApp) is numbered by the fallback rule of
:meth:`~fl_r2sp.fl.flower.discovery.PartitionMap.number_stock`.

Message protocol (the project's ClientApp speaks it, and it is what Flower's
own ``FedAvg`` sends, so any ClientApp written as Flower's templates serves both):

* train request: ``RecordDict({"arrays": ArrayRecord, "config": ConfigRecord})``;
  the config holds the user's ``train_config`` plus the project's keys
  :data:`PROJECT_KEYS`: ``job`` (per-client job index), ``tag``, ``cid``
  (partition id), ``clock``, ``compute-s`` and ``delay-s`` (the modelled timing of the job,
  which :mod:`fl_r2sp.fl.flower.timed` reports back or sleeps);
* train reply: ``"arrays"`` and ``"metrics"`` with ``num-examples``; the rest is
  optional (:mod:`fl_r2sp.fl.flower.replies` states what its absence means).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence

import numpy as np
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.common.constant import ErrorCode
from flwr.serverapp import Grid

from fl_r2sp.fl.clients.timing import JobTiming
from fl_r2sp.fl.flower.discovery import PartitionMap, check_found, discover
from fl_r2sp.fl.flower.node_manifest import Binding
from fl_r2sp.fl.flower.records import named_record
from fl_r2sp.fl.flower.replies import ReplyContent, read_reply
from fl_r2sp.fl.flower.replies import mismatch as mismatch
from fl_r2sp.fl.flower.retry import RetryPolicy, call_with_retry
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.admission import OFFLINE_PREFIX
from fl_r2sp.fl.server.virtual_checks import VirtualTimeError
from fl_r2sp.models.weights import flatten, unflatten

log = logging.getLogger("fl_r2sp")

#: Seconds between two pulls while waiting (pulls are cheap: ~0.06 ms).
PULL_INTERVAL = 0.005
#: Flower error codes of messages lost to real time (TTL expired, node without heartbeat).
REAL_TIME_ERRORS = frozenset(
    {ErrorCode.MESSAGE_UNAVAILABLE, ErrorCode.REPLY_MESSAGE_UNAVAILABLE, ErrorCode.NODE_UNAVAILABLE}
)


def query_message(node: int) -> Message:
    """The partition query for ``node`` (answered with ``partition-id`` and ``num-partitions``)."""
    return Message(
        RecordDict({"config": ConfigRecord({"ask": "partition-id"})}), node, MessageType.QUERY
    )


def find_partitions(
    grid: Grid,
    timeout: float = 120.0,
    expected: int = 0,
    wait_for_all: bool = False,
    allow_missing: bool = False,
    retry: RetryPolicy | None = None,
    grace: float = 0.0,
    bindings: Mapping[int, Binding] | None = None,
) -> PartitionMap:
    """Ask every node for its ``partition-id``; the map, kept for re-discovery during the run.

    With ``wait_for_all``, waits up to ``timeout`` s (``node-wait``) for
    ``expected`` partitions to answer, asking nodes as they connect (a node
    told another ``num-partitions`` fails the run as soon as it answers); with
    ``grace > 0`` (``node-grace``) the wait ends early once fewer than
    ``expected`` nodes are online and none came or went for ``grace`` s. If
    partitions are missing after the wait, that is an error naming them unless
    ``allow_missing`` (run-config ``allow-missing-nodes``): then the run goes on
    with those that answered, and a warning names the others. A second node
    reporting a known partition is refused with a warning (:mod:`.discovery`), and so is,
    with ``bindings`` (the node manifest), a node claiming a partition not bound to its key.

    Raises
    ------
    ValueError
        If a node was told a ``num-partitions`` other than ``expected`` (the
        run would silently train on a fraction of the data).
    RuntimeError
        If partitions of ``0..expected-1`` are missing and not ``allow_missing``.
    """
    pmap = discover(
        grid, query_message, expected, timeout, wait_for_all, retry, grace=grace, bindings=bindings
    )
    check_found(pmap.node_of, expected, allow_missing, len(pmap.online), pmap.waited)
    return pmap


def discover_partitions(
    grid: Grid,
    timeout: float = 120.0,
    expected: int = 0,
    wait_for_all: bool = False,
    allow_missing: bool = False,
) -> dict[int, int]:
    """{partition id: node id} of :func:`find_partitions` (same arguments and errors)."""
    return dict(find_partitions(grid, timeout, expected, wait_for_all, allow_missing).node_of)


#: Config keys the project's strategies put in every train message (a user's
#: ``train_config`` may not use them: :func:`merge_config` refuses a clash).
PROJECT_KEYS = ("job", "tag", "cid", "clock", "compute-s", "delay-s")


def check_user_config(config: ConfigRecord | None, what: str = "train_config") -> None:
    """Refuse a user config that uses a key of :data:`PROJECT_KEYS`, naming the key.

    Raises
    ------
    ValueError
        ``config`` holds a project key.
    """
    clash = sorted(set(config or {}) & set(PROJECT_KEYS))
    if clash:
        raise ValueError(
            f"{what} key {clash[0]!r} clashes with a key the strategy sets in every message "
            f"({', '.join(PROJECT_KEYS)}): rename it in {what} and in the ClientApp"
        )


def merge_config(user: ConfigRecord | None, ours: dict[str, int | float | str]) -> ConfigRecord:
    """A fresh ConfigRecord: the user's keys, then the project's (:func:`check_user_config`
    has refused any clash at start)."""
    merged = ConfigRecord(dict(user or {}))
    for key, value in ours.items():
        merged[key] = value
    return merged


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
        :class:`~fl_r2sp.fl.server.virtual_checks.VirtualTimeError` instead of
        becoming an error reply, i.e. a failed job in virtual time.
    pmap : PartitionMap or None (default: None = no liveness tracking)
        The map :func:`find_partitions` built (wall clock). Every
        ``liveness_every`` s the transport refreshes it: a job whose node left
        the online set fails at once (``node offline``, not after
        ``job-timeout``), a job for a partition without a live node fails on
        submit, and partitions re-attached to a new node are reported by
        :meth:`take_rejoined`.
    retry : RetryPolicy or None (default: RetryPolicy())
        Backoff of push/pull calls that hit a transient SuperLink error; a push
        that still fails becomes a failed job, a pull that still fails raises.
    liveness_every : float (default: 1.0)
        Seconds between two reads of the online node set.
    train_config : ConfigRecord or None (default: None)
        The user's keys, sent in every train message's config beside :data:`PROJECT_KEYS`.
    timing : JobTiming or None (default: None)
        The jobs' modelled timing: sent as ``compute-s`` / ``delay-s`` and, under the
        virtual clock, used for a reply that reports none (:mod:`.replies`).
    names : sequence of str or None (default: None = Flower's list keys "0", "1", ...)
        The model's array names (``initial_arrays.keys()``), kept in every message.
    """

    def __init__(
        self,
        grid: Grid,
        template: Sequence[np.ndarray],
        partitions: dict[int, int],
        ttl: float = 3600.0,
        virtual: bool = False,
        pmap: PartitionMap | None = None,
        retry: RetryPolicy | None = None,
        liveness_every: float = 1.0,
        train_config: ConfigRecord | None = None,
        timing: JobTiming | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.names = list(names) if names is not None else None
        check_user_config(train_config)
        self.train_config = train_config
        self.timing = timing
        self.grid = grid
        self.template = [np.asarray(a) for a in template]
        self.pmap = pmap
        # Shared with the map, so that a re-attached partition's next job goes to its new node.
        self.node_of = pmap.node_of if pmap is not None else dict(partitions)
        self._initial = frozenset(partitions)
        self.ttl = ttl
        self.virtual = virtual
        self.retry = retry if retry is not None else RetryPolicy()
        self.liveness_every = liveness_every
        self.inflight: dict[str, Job] = {}
        self._by_cid: dict[int, str] = {}
        self._dest: dict[str, int] = {}  # message id -> the node it was pushed to
        self._failed: list[Reply] = []  # jobs failed by the transport itself, for the next poll
        self._rejoined: list[int] = []
        self._checked = -math.inf

    def clients(self) -> list[int]:
        """Partition ids of the nodes discovered at start, sorted (the run's clients)."""
        return sorted(self._initial)

    def take_rejoined(self) -> list[int]:
        """Partitions of the run re-attached to a new node since the last call."""
        out, self._rejoined = self._rejoined, []
        return out

    def submit(self, job: Job) -> None:
        """Push a train message to the job's node."""
        if job.cid in self._by_cid:
            raise RuntimeError(f"client {job.cid} already has a message in flight")
        arrays = named_record(unflatten(job.weights, self.template), self.names)
        ours: dict[str, int | float | str] = {"job": job.index, "tag": job.tag, "cid": job.cid}
        ours["clock"] = "virtual" if self.virtual else "wall"
        if self.timing is not None:
            ours["compute-s"] = self.timing.compute(job.cid, job.index)
            ours["delay-s"] = self.timing.delay(job.cid, job.index)
        config = merge_config(self.train_config, ours)
        node = self.node_of[job.cid]
        if self.pmap is not None and node not in self.pmap.online:
            self._fail(job, f"{OFFLINE_PREFIX}: partition {job.cid} has no live node")
            return
        msg = Message(
            RecordDict({"arrays": arrays, "config": config}), node, MessageType.TRAIN, ttl=self.ttl
        )
        try:
            (mid,) = call_with_retry(
                lambda: list(self.grid.push_messages([msg])), f"push to node {node}", self.retry
            )
        except Exception as exc:  # noqa: BLE001 -- the SuperLink refused it: fail this job only
            self._fail(job, f"push failed after retries: {exc}")
            return
        self.inflight[mid] = job
        self._by_cid[job.cid] = mid
        self._dest[mid] = node

    def _fail(self, job: Job, error: str) -> None:
        # The loop logs the failed job (with its admission verdict): no second warning here.
        log.debug("client %d job %d failed: %s", job.cid, job.index, error)
        self._failed.append(Reply(job.cid, job.index, job.tag, None, error=error))

    def poll(self, timeout: float) -> list[Reply]:
        """Pull replies; wait up to ``timeout`` s for at least one."""
        deadline = time.monotonic() + timeout
        while True:
            got, self._failed = self._failed, []
            if self.inflight:
                pulled = call_with_retry(
                    lambda: list(self.grid.pull_messages(list(self.inflight))),
                    "pull replies",
                    self.retry,
                )
                got += [r for r in map(self._convert, pulled) if r is not None]
            if self.pmap is not None and time.monotonic() - self._checked >= self.liveness_every:
                got += self._check_liveness()
            if got or not self.inflight or time.monotonic() >= deadline:
                return got
            time.sleep(PULL_INTERVAL)

    def _check_liveness(self) -> list[Reply]:
        """Refresh the partition map; fail the jobs whose node left the online set."""
        assert self.pmap is not None
        self._checked = time.monotonic()
        self._rejoined += [p for p in self.pmap.refresh() if p in self._initial]
        gone = [mid for mid, node in self._dest.items() if node not in self.pmap.online]
        out: list[Reply] = []
        for mid in gone:
            job = self.inflight.pop(mid)
            self._by_cid.pop(job.cid, None)
            node = self._dest.pop(mid)
            error = f"{OFFLINE_PREFIX}: node {node} left the SuperLink's online set"
            log.debug("client %d job %d failed: %s", job.cid, job.index, error)
            out.append(Reply(job.cid, job.index, job.tag, None, error=error))
        return out

    def _convert(self, msg: Message) -> Reply | None:
        job = self.inflight.pop(msg.metadata.reply_to_message_id, None)
        self._dest.pop(msg.metadata.reply_to_message_id, None)
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
            # Wall clock: Flower's "node without heartbeat" is a lost node, as the online set says.
            lost = msg.error.code == ErrorCode.NODE_UNAVAILABLE
            kind = OFFLINE_PREFIX if lost else "client error"
            return Reply(job.cid, job.index, job.tag, None, error=f"{kind}: {msg.error.reason}")
        got = read_reply(msg.content, self.template)
        if isinstance(got, str):  # admission files it as rejected (malformed, shape, dtype)
            return Reply(job.cid, job.index, job.tag, None, error=got)
        compute, delay = self._timing_of(job, got)
        return Reply(
            job.cid,
            job.index,
            job.tag,
            flatten(got.arrays),
            num_examples=got.num_examples,  # type: ignore[arg-type]  # admission checks it
            loss=got.loss,
            compute_s=compute,
            delay_s=delay,
        )

    def _timing_of(self, job: Job, got: ReplyContent) -> tuple[float, float]:
        """The reply's ``compute-s`` / ``delay-s``, or the rule of :mod:`.replies` for each
        one absent: the server's model (virtual clock); wall clock, compute NaN (not reported,
        unused) and delay 0 (no one slept one; the strategy warns at start)."""
        compute, delay = got.compute_s, got.delay_s
        if self.virtual and self.timing is not None:
            if compute is None:
                compute = self.timing.compute(job.cid, job.index)
            if delay is None:
                delay = self.timing.delay(job.cid, job.index)
        return (
            float("nan") if compute is None else compute,
            0.0 if delay is None else delay,
        )

    def forget(self, cid: int) -> None:
        """Stop waiting for ``cid``'s message (timed out)."""
        mid = self._by_cid.pop(cid, None)
        if mid is not None:
            self.inflight.pop(mid, None)
            self._dest.pop(mid, None)

    def close(self) -> None:
        """Forget everything in flight (Flower discards late replies by TTL)."""
        self.inflight.clear()
        self._by_cid.clear()
        self._dest.clear()
        self._failed.clear()

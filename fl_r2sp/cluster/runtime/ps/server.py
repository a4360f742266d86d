"""A parameter-server rank: one shard, and two threads per worker that serve it.

For every worker the PS runs a **push receiver** (blocking ``recv`` from that worker only, then
a lock-protected apply in :class:`~fl_r2sp.cluster.runtime.ps.shard.ShardState`) and a **pull
server** (receives the worker's small pull request, waits for the version it needs, replies
with the shard). One thread per worker and direction keeps the service fair: a serial
any-source loop lets one worker monopolise the PS, and in/out transfers of different workers
overlap. With ``--server-bandwidth`` each PS charges one token bucket for all ingress chunks
and one for all egress chunks before they move; because a gloo send waits for the matching
receive, pacing the receiver also paces the sender.

Admission (SAFA): with ``admission`` the push receiver holds each push in the shard until the
coordinator's verdict on it appears under ``verdict/<w>/<k>`` (set once, read by every shard),
then applies or drops it. The worker sends its next push only after its next permission, which
the coordinator issues after the verdict, so waiting in the receiver costs no throughput. A
verdict that does not come within ``timeout_s`` (the coordinator is gone; the run is failing)
drops the push.

A thread ends when its worker says BYE, or when a transfer with it fails: a worker process
that dies closes its connections and the pending receive raises at once ("Connection closed
by peer"); a worker that stops talking hits the process group's timeout. Either way the worker
is reported lost through ``on_lost`` (rank 0 forwards it to the coordinator).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import torch
import torch.distributed as dist

from fl_r2sp.cluster.policies.common.base import ApplyMode
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, wait_get
from fl_r2sp.cluster.runtime.common.throttle import MB, TokenBucket, recv_chunked, send_chunked
from fl_r2sp.cluster.runtime.ps.shard import RunAborted, ShardState

LostCallback = Callable[[int, str], None]
#: Test hook: ``"<server>:<n>"`` makes that PS's process exit abruptly (``os._exit(18)``) once
#: it has received ``n`` pushes.
KILL_SERVER_ENV = "FL_R2SP_CLUSTER_KILL_SERVER"


class ShardCounters(Protocol):
    """What :class:`ShardService` reads of a shard (:class:`ShardState`, ``OSPShard``)."""

    applied: int
    pushes: list[int]
    version: int
    max_staleness: int
    dropped: list[tuple[int, int]]

    def lose(self, worker: int) -> None:
        """Drop ``worker`` from the shard's barriers."""


S = TypeVar("S", bound=ShardCounters)


class ShardService(Generic[S]):
    """What every parameter-server rank keeps beside its shard: link buckets, arrivals, lost
    workers, service threads, and the end-of-run report (:class:`ParameterServer`, OSP's
    :class:`~fl_r2sp.cluster.runtime.osp.server.OSPServer`).

    Parameters
    ----------
    ctx : RankContext
        This rank's context (a parameter-server rank).
    state : ShardCounters
        The rank's shard.
    on_lost : callable or None
        ``on_lost(worker, reason)`` when a worker's transfer fails (called from a PS thread).
    """

    def __init__(self, ctx: RankContext, state: S, on_lost: LostCallback | None) -> None:
        cfg = ctx.cfg
        self.ctx, self.index, self.state, self.on_lost = ctx, ctx.rank, state, on_lost
        rate = cfg.server_bandwidth_mb_s * MB
        chunk = cfg.chunk_kb * 1024
        self.ingress = TokenBucket(rate, chunk) if ctx.throttled else None
        self.egress = TokenBucket(rate, chunk) if ctx.throttled else None
        self.arrivals: list[tuple[int, int, float]] = []  # (worker, iteration, t)
        #: ``on_arrival(worker, iteration, t)`` for every arrival as it happens (rank 0 streams
        #: its shard's arrivals to ``ps_updates.csv``); set before :meth:`start`.
        self.on_arrival: Callable[[int, int, float], None] | None = None
        self.lost: dict[int, str] = {}
        self.threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _spawn(self, target: Callable[..., None], args: tuple[Any, ...], name: str) -> None:
        """Start a daemon service thread and keep it for :meth:`_join`."""
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        t.start()
        self.threads.append(t)

    def _join(self, t: threading.Thread) -> None:
        """Wait for ``t`` (each service ends on BYE, a failure or the PG timeout).

        Raises
        ------
        TimeoutError
            If ``t`` is still alive ``timeout_s + 30`` s later.
        """
        t.join(self.ctx.cfg.timeout_s + 30.0)
        if t.is_alive():
            raise TimeoutError(f"PS {self.index}: thread {t.name} did not end")

    def _arrived(self, w: int, iteration: int) -> int:
        """Record the arrival of ``w``'s update of ``iteration`` now; return the count so far."""
        t = self.ctx.now()
        with self._lock:
            self.arrivals.append((w, iteration, t))
            count = len(self.arrivals)
        if self.on_arrival is not None:
            self.on_arrival(w, iteration, t)
        return count

    def _lose(self, w: int, reason: str) -> None:
        """Drop ``w`` from the shard; report it through ``on_lost`` the first time only."""
        with self._lock:
            first = w not in self.lost
            if first:
                self.lost[w] = reason
        self.state.lose(w)
        if first and self.on_lost is not None:
            self.on_lost(w, reason)

    def report(self) -> dict[str, Any]:
        """End-of-run statistics of this shard (JSON-able)."""
        with self._lock:
            arrivals = list(self.arrivals)
        return {
            "shard": self.index,
            "updates_applied": self.state.applied,
            "pushes": list(self.state.pushes),
            "version": self.state.version,
            "max_staleness": self.state.max_staleness,
            "discarded": [list(d) for d in self.state.dropped],
            "lost": {str(k): v for k, v in self.lost.items()},
            "arrivals": arrivals,
            "ingress_wait_s": self.ingress.seconds_slept if self.ingress else 0.0,
            "egress_wait_s": self.egress.seconds_slept if self.egress else 0.0,
        }


class ParameterServer(ShardService[ShardState]):
    """Shard ``ctx.rank`` of the parameters and its per-worker service threads.

    Parameters
    ----------
    ctx : RankContext
        This rank's context (a parameter-server rank).
    init_flat : torch.Tensor
        The model's initial flattened parameters (all shards; this PS keeps its slice).
    apply_mode : str
        The policy's apply mode ("immediate" or "barrier").
    on_lost : callable or None
        ``on_lost(worker, reason)`` when a worker's transfer fails (called from a PS thread).
    admission : bool, default False
        Hold each push until the coordinator's verdict (the policy's ``admission``).
    """

    def __init__(
        self,
        ctx: RankContext,
        init_flat: torch.Tensor,
        apply_mode: ApplyMode,
        on_lost: LostCallback | None = None,
        admission: bool = False,
    ) -> None:
        cfg = ctx.cfg
        a, b = ctx.bounds[ctx.rank]
        state = ShardState(
            init_flat[a:b], cfg.lr, cfg.batch_size, cfg.momentum, apply_mode, cfg.workers,
            track_staleness=ctx.rank == 0, admission=admission,
        )  # fmt: skip
        super().__init__(ctx, state, on_lost)
        self.chunk_bytes = P.chunk_bytes_for(P.HEADER + b - a, ctx.throttled, cfg.chunk_kb)
        hook = os.environ.get(KILL_SERVER_ENV, "")
        server, _, count = hook.partition(":")
        self.kill_after = int(count) if hook and int(server) == self.index else -1

    def start(self) -> None:
        """Start the push receiver and pull server of every worker."""
        for w in range(self.ctx.cfg.workers):
            for target, name in ((self._serve_pushes, "push"), (self._serve_pulls, "pull")):
                self._spawn(target, (w,), f"ps{self.index}-{name}-w{w}")

    def join(self) -> None:
        """Wait for every service thread (each ends on BYE, on failure or on the PG timeout)."""
        for t in self.threads:
            self._join(t)

    def _serve_pushes(self, w: int) -> None:
        src = self.ctx.rank_of(w)
        a, b = self.ctx.bounds[self.index]
        msg = torch.zeros(P.HEADER + b - a)
        store = new_store() if self.state.admission else None
        try:
            while True:
                recv_chunked(msg, P.TAG_PUSH, P.TAG_PUSH_REST, src=src,
                             chunk_bytes=self.chunk_bytes, bucket=self.ingress)  # fmt: skip
                kind, worker, iteration, batch = P.decode_header(msg)
                if kind == P.BYE:
                    return
                if worker != w:
                    raise ValueError(f"push from rank {src} claims worker {worker}")
                self.state.push(w, iteration, batch, msg[P.HEADER :])
                if self._arrived(w, iteration) == self.kill_after:
                    os._exit(18)  # test hook: die abruptly
                if store is not None:
                    self._await_verdict(store, w, iteration)
        except Exception as exc:  # a dead peer surfaces as RuntimeError from gloo
            self._lose(w, f"push from {self.ctx.describe(src)} failed: {short_error(exc)}")

    def _await_verdict(self, store: Any, w: int, iteration: int) -> None:
        """Resolve the held push ``(w, iteration)`` by the coordinator's verdict."""
        try:
            verdict = wait_get(store, P.verdict_key(w, iteration), self.ctx.cfg.timeout_s,
                               delete=False)  # fmt: skip
        except TimeoutError:
            print(f"[ps {self.index}] no verdict on worker {w}'s push of iteration {iteration} "
                  f"within {self.ctx.cfg.timeout_s:.0f}s; dropped", flush=True)  # fmt: skip
            verdict = {"apply": False}
        self.state.resolve(w, iteration, bool(verdict["apply"]))

    def _serve_pulls(self, w: int) -> None:
        src = self.ctx.rank_of(w)
        a, b = self.ctx.bounds[self.index]
        request = torch.zeros(P.HEADER)
        reply = torch.zeros(P.HEADER + b - a)
        try:
            while True:
                dist.recv(request, src=src, tag=P.TAG_PULL_REQ)
                kind, _, min_version, _ = P.decode_header(request)
                if kind == P.BYE:
                    return
                try:
                    version = self.state.read(w, min_version, reply[P.HEADER :],
                                              self.ctx.cfg.timeout_s)  # fmt: skip
                    P.encode_header(reply, P.DATA, version, self.state.applied)
                except (RunAborted, TimeoutError):
                    P.encode_header(reply, P.ABORT)
                send_chunked(reply, src, P.TAG_PULL, P.TAG_PULL_REST,
                             chunk_bytes=self.chunk_bytes, bucket=self.egress)  # fmt: skip
        except Exception as exc:
            self._lose(w, f"pull by {self.ctx.describe(src)} failed: {short_error(exc)}")


def short_error(exc: BaseException) -> str:
    """One line: the exception type and message, without gloo's source-path prefix and advice."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = re.sub(r"^\[[^\]]*\]\s*", "", text).split(". This is typically")[0]
    return f"{type(exc).__name__}: {text[:160]}"

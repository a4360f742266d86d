"""An OSP parameter-server rank: one shard, two service threads per worker, and (PS 0) the GIB.

For every (remote) worker and stage (RS, ICS) a thread receives the worker's header, the
stage's gradient elements of this shard (their count must match the GIB of that iteration),
submits them to :class:`~fl_r2sp.cluster.runtime.osp.shard.OSPShard`, waits for the stage's
barrier and answers with the mean (or ABORT). One thread per worker and stage keeps a slow
worker from holding up the others and lets a worker's background ICS exchange run beside its
RS exchange. With ``--server-bandwidth`` one token bucket per direction charges every payload
chunk, as in :mod:`.server`. A co-located worker (OSP-C) calls :meth:`OSPServer.handle` in
process instead, without touching the link.

PS 0 also runs the GIB thread: it publishes the ICS layers of iteration 0, then for every
iteration j waits for every shard's importance sums (``osp/imp/<s>/<j>``), asks the
:class:`~fl_r2sp.cluster.runtime.osp.gib.GibPlanner` and publishes ``osp/gib/<j+1>``. Every
store wait is bounded (``timeout_s``, polled in short slices so the thread ends with the run).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, set_json, wait_get
from fl_r2sp.cluster.runtime.common.throttle import recv_chunked, send_chunked
from fl_r2sp.cluster.runtime.osp import wire as W
from fl_r2sp.cluster.runtime.osp.gib import GibPlanner, IterationSums
from fl_r2sp.cluster.runtime.osp.layout import LayerLayout, count
from fl_r2sp.cluster.runtime.osp.shard import ICS, RS, STAGES, OSPShard
from fl_r2sp.cluster.runtime.ps.server import ShardService, short_error
from fl_r2sp.cluster.runtime.ps.shard import RunAborted

POLL_S = 0.5
#: Poll period of PS 0's GIB thread for the shards' importance sums (seconds).
PLAN_POLL_S = 0.005


class GibCache:
    """The ICS-layer lists ``osp/gib/<j>`` read from the store, cached (thread-safe)."""

    def __init__(self, layout: LayerLayout, timeout_s: float) -> None:
        self.layout, self.timeout_s = layout, timeout_s
        self._cache: dict[int, list[bool]] = {}
        self._lock = threading.Lock()
        self._store: Any = None

    def bitmap(self, iteration: int) -> list[bool]:
        """The GIB of ``iteration`` (waits up to ``timeout_s`` for it)."""
        with self._lock:
            if iteration in self._cache:
                return self._cache[iteration]
            if self._store is None:
                self._store = new_store()
            got = wait_get(self._store, W.gib_key(iteration), self.timeout_s, delete=False)
            bitmap = self.layout.bitmap(got["ics"])
            self._cache[iteration] = bitmap
            self._cache.pop(iteration - 3, None)
            return bitmap


class OSPServer(ShardService[OSPShard]):
    """Shard ``ctx.rank`` under OSP and its service threads (see the module docstring).

    Parameters
    ----------
    ctx : RankContext
        This rank's context (a parameter-server rank).
    init_flat : torch.Tensor
        The model's initial flattened parameters.
    layout : LayerLayout
        Layers and shard bounds.
    remote_workers : list of int
        Workers served over gloo (all but a co-located one).
    worker_rank : callable
        ``worker_rank(w)`` gives worker w's global rank.
    on_lost : callable or None
        ``on_lost(worker, reason)`` when a transfer with a worker fails.
    planner : GibPlanner or None
        PS 0's planner (None on the other shards).
    """

    def __init__(
        self,
        ctx: RankContext,
        init_flat: torch.Tensor,
        layout: LayerLayout,
        remote_workers: list[int],
        worker_rank: Callable[[int], int],
        on_lost: Callable[[int, str], None] | None = None,
        planner: GibPlanner | None = None,
    ) -> None:
        cfg = ctx.cfg
        a, b = layout.bounds[ctx.rank]
        state = OSPShard(
            init_flat[a:b],
            ctx.rank,
            layout,
            cfg.lr,
            cfg.workers,
            on_complete=self._publish_importance,
        )
        super().__init__(ctx, state, on_lost)
        self.cfg, self.layout = cfg, layout
        self.remote, self.worker_rank = remote_workers, worker_rank
        self.planner = planner
        self.gibs = GibCache(layout, cfg.timeout_s)
        self.closing = threading.Event()
        self._store = new_store()

    def chunk(self, n: int) -> int:
        """Chunk size of an ``n``-element payload (the worker side uses the same rule)."""
        return P.chunk_bytes_for(n, self.ctx.throttled, self.cfg.chunk_kb)

    def start(self) -> None:
        """Start the service threads (and PS 0's GIB thread)."""
        targets: list[tuple[Callable[..., None], tuple[Any, ...], str]] = [
            (self._serve, (w, s), f"osp{self.index}-{s}-w{w}") for w in self.remote for s in STAGES
        ]
        if self.planner is not None:
            targets.append((self._plan, (), "osp-gib"))
        else:  # the coordinator aborts shard 0 directly; the others learn it from the stop key
            targets.append((self._watch_stop, (), f"osp{self.index}-stop"))
        for fn, args, name in targets:
            self._spawn(fn, args, name)

    def join(self) -> None:
        """Wait for the service threads (each ends on BYE, a failure or the PG timeout), then
        end the GIB / stop-watch thread (it must outlive the services: it may have to abort
        them)."""
        *services, helper = self.threads
        for t in [*services, helper]:
            if t is helper:
                self.closing.set()
            self._join(t)

    def handle(
        self, stage: str, w: int, j: int, payload: torch.Tensor, loss: float, compute_s: float
    ) -> torch.Tensor | None:
        """Submit ``w``'s part of ``stage`` in ``j``; return the mean, None if aborted.

        Raises
        ------
        ValueError
            If the part's size does not match the GIB of ``j``.
        """
        ranges = self.layout.shard_ranges(self.index, self.gibs.bitmap(j), stage == ICS)
        if payload.numel() != count(ranges):
            raise ValueError(
                f"worker {w} sent {payload.numel()} {stage} values of iteration "
                f"{j}; the GIB gives {count(ranges)} in shard {self.index}"
            )
        if stage == RS:
            self._arrived(w, j)
        self.state.submit(stage, w, j, ranges, payload, loss, compute_s)
        try:
            return self.state.await_mean(stage, j, self.cfg.timeout_s)
        except (RunAborted, TimeoutError):
            return None

    def _serve(self, w: int, stage: str) -> None:
        src, tags = self.worker_rank(w), W.TAGS[stage]
        hdr, reply = torch.zeros(W.HEADER), torch.zeros(W.HEADER)
        try:
            while True:
                dist.recv(hdr, src=src, tag=tags.push)
                kind, worker, j, n, _, loss, compute_s = W.decode(hdr)
                if kind == P.BYE:
                    return
                if kind == W.WARM:
                    W.encode(reply, W.WARM, worker)
                    dist.send(reply, src, tag=tags.reply)
                    continue
                if worker != w:
                    raise ValueError(f"{stage} header from rank {src} claims worker {worker}")
                payload = torch.zeros(n)
                if n:
                    recv_chunked(
                        payload,
                        tags.payload,
                        tags.payload_rest,
                        src=src,
                        chunk_bytes=self.chunk(n),
                        bucket=self.ingress,
                    )
                mean = self.handle(stage, w, j, payload, loss, compute_s)
                W.encode(reply, P.DATA if mean is not None else P.ABORT, w, j, n)
                dist.send(reply, src, tag=tags.reply)
                if mean is not None and n:
                    send_chunked(
                        mean,
                        src,
                        tags.reply_payload,
                        tags.reply_rest,
                        chunk_bytes=self.chunk(n),
                        bucket=self.egress,
                    )
        except Exception as exc:  # a dead peer surfaces as RuntimeError from gloo
            self._lose(
                w, f"{stage} exchange with {self.ctx.describe(src)} failed: {short_error(exc)}"
            )

    def _watch_stop(self) -> None:
        """Abort this shard's barriers once the run stops on an error (``stop`` key)."""
        store = new_store()
        while not self.closing.wait(POLL_S / 2):
            if store.check([P.STOP_KEY]):
                self.state.abort(str(P.loads(store.get(P.STOP_KEY)).get("error")))
                return

    def _publish_importance(self, j: int, sums: IterationSums) -> None:
        # keys imp, gabs, losses, computes: the fields _plan reads back
        with self._lock:
            set_json(self._store, W.importance_key(self.index, j), sums._asdict())

    def _plan(self) -> None:
        """PS 0: publish the GIB of every iteration (see the module docstring)."""
        assert self.planner is not None
        store = new_store()
        set_json(store, W.gib_key(0), {"ics": self.planner.first(), "budget": self.planner.budget})
        for j in range(self.cfg.max_iterations - 1):
            got = [self._await_key(store, W.importance_key(s, j)) for s in range(self.cfg.servers)]
            parts = [p for p in got if p is not None]
            if len(parts) < len(got):  # the run ended (or failed) before iteration j
                # completed everywhere: wake the workers waiting for the next GIB
                set_json(store, W.gib_key(j + 1), {"ics": [], "abort": True})
                return
            imp = [sum(v) for v in zip(*(p["imp"] for p in parts), strict=True)]
            gabs = [sum(v) for v in zip(*(p["gabs"] for p in parts), strict=True)]
            sums = IterationSums(imp, gabs, parts[0]["losses"], parts[0]["computes"])
            layers = self.planner.next(j, sums)
            set_json(store, W.gib_key(j + 1), {"ics": layers, "budget": self.planner.budget})

    def _await_key(self, store: Any, key: str) -> dict[str, Any] | None:
        """The key's JSON (deleted), or None once the run closes or ``timeout_s`` passes."""
        # check() polling: a short store.wait that times out makes c10d log a warning each time
        deadline = time.monotonic() + self.cfg.timeout_s
        while self.state.aborted is None and time.monotonic() < deadline:
            if store.check([key]):
                return wait_get(store, key, self.cfg.timeout_s)
            if self.closing.wait(PLAN_POLL_S):
                return None
        return None

    def summary_extra(self) -> dict[str, Any]:
        """PS 0's OSP record for the run summary: U_max and the GIB of every iteration."""
        if self.planner is None:
            return {}
        recs = self.planner.records
        return {
            "osp": {
                "umax_bytes": self.planner.umax,
                "model_bytes": self.planner.model_bytes,
                "epoch_iterations": self.planner.epoch_iterations,
                "mean_ics_fraction": (
                    sum(r["ics_fraction"] for r in recs) / len(recs) if recs else 0.0
                ),
                "gib": recs,
            }
        }

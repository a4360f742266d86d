"""An OSP worker: compute, split by the GIB, RS + LGP, background ICS, Eq. 7 at the boundary.

The worker keeps its own parameters ``P`` (it never pulls the model). Iteration k, after the
coordinator's permission:

1. compute the local gradient ``g`` on ``P`` (local update ``G^l = -lr·g``);
2. read the GIB of iteration k (``osp/gib/<k>``, PS 0; waiting here is the case T_C < T_ICS);
3. **RS** (blocking): send the important layers' elements to every shard, receive the mean
   ``ḡ`` of those elements over the live workers;
4. **LGP** (Eq. 6, local superscript): ``P += -lr·ḡ`` on the important layers and ``P += -lr·g``
   on the unimportant ones (LGP off: unimportant layers unchanged);
5. boundary: wait for the ICS of iteration k - 1 (started at the previous boundary) and apply
   **Eq. 7**: ``P += G^g − G^l = -lr·(ḡ − g)`` on its layers (LGP off: ``-lr·ḡ``);
6. start the **ICS** of iteration k in a background thread (the unimportant layers' elements out,
   their mean back) and report to the coordinator, whose permission for k + 1 comes at once.

At the end (stop, or the last iteration) the pending ICS is applied, so the worker's model is
the PS's model. Steps 4-5 follow :func:`fl_r2sp.cluster.policies.osp.reference.
run_osp_reference`; with no layer in ICS the worker's ``P`` equals the shards' parameters after
every iteration (BSP), with every layer in ICS it is the one-aggregate-behind scheme that module
documents. Row times: ``compute_s`` as :mod:`.worker`; ``push_s`` everything after the compute
(GIB wait + RS + ICS wait), split into ``gib_wait_s``, ``rs_s`` and ``ics_wait_s``.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import torch
from torch import nn

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, set_json, wait_get
from fl_r2sp.cluster.runtime.osp import wire as W
from fl_r2sp.cluster.runtime.osp.layout import LayerLayout, Range, add_ranges, gather
from fl_r2sp.cluster.runtime.osp.links import OSPLinks
from fl_r2sp.cluster.runtime.ps.worker import Worker
from fl_r2sp.cluster.userjob.job import encode_buffers


class _Aborted(RuntimeError):
    """The run is ending on an error (a shard answered ABORT or the stop key is set)."""


class _ICS:
    """One background ICS exchange and what Eq. 7 needs when it returns."""

    def __init__(
        self,
        links: OSPLinks,
        k: int,
        ranges: list[list[Range]],
        local: list[torch.Tensor],
        batch: int,
    ) -> None:
        self.k, self.ranges, self.local = k, ranges, local
        self.means: list[torch.Tensor] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(links, batch), daemon=True, name=f"ics-{k}"
        )
        self.thread.start()

    def _run(self, links: OSPLinks, batch: int) -> None:
        try:
            self.means = links.exchange("ics", self.k, self.local, batch)
        except BaseException as exc:  # handed to the main thread at the boundary
            self.error = exc


class OSPWorker(Worker):
    """Worker ``ctx.rank - S`` (or ``ctx.rank`` under OSP-C) running OSP (module docstring).

    Parameters
    ----------
    ctx : RankContext
        This rank's context.
    worker : int or None, default None
        Worker index (None: ``ctx.rank - servers``).
    local : dict or None, default None
        ``{shard: OSPServer}`` co-located in this process (OSP-C).
    lgp : bool, default True
        Apply local updates to the unimportant layers (the run's ``OSPParams.lgp``).
    """

    def __init__(
        self,
        ctx: RankContext,
        worker: int | None = None,
        local: dict[int, Any] | None = None,
        lgp: bool = True,
    ) -> None:
        super().__init__(ctx, barrier=True)
        if worker is not None:
            self.w = worker
            self._reseed()
        cfg = self.cfg
        self.layout = LayerLayout.of_model(self.model, ctx.bounds)
        self.flat = nn.utils.parameters_to_vector(self.params).detach().cpu().clone()
        self.osp = OSPLinks(self.w, cfg.servers, ctx.throttled, cfg.chunk_kb, local)
        self.lgp = lgp
        self.pending: _ICS | None = None
        self.gibs: list[list[int]] = []

    def _reseed(self) -> None:
        """Rebuild the batch stream and kill hook for an explicitly given worker index."""
        from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV, worker_seed

        if self.stream is not None:
            self.stream = self.job.stream(self.w, worker_seed(self.cfg.seed, self.w))
        kill = os.environ.get(KILL_ENV, "")
        self.kill_at = int(kill.split(":")[1]) if kill and int(kill.split(":")[0]) == self.w else -1

    def _loop(self) -> None:
        self._transfer(self.osp.warm, "warm-up")
        set_json(self.store, P.ready_key(self.w), {"t": self.ctx.now()})
        t_req, k = time.perf_counter(), 0
        try:
            while True:
                grant = wait_get(self.store, P.grant_key(self.w, k), self.cfg.timeout_s)
                t_perm = time.perf_counter()
                latency = max(0.0, self.ctx.now() - float(grant["t"])) if "t" in grant else None
                if grant.get("stop"):
                    self._drain()
                    if grant.get("evaluate"):
                        self._evaluate(k)
                    break
                row = self._iterate(k, int(grant["batch_size"]), t_req, t_perm)
                row["permission_s"] = latency
                t_req = time.perf_counter()
                set_json(self.store, P.request_key(self.w, k), row)
                k += 1
        except _Aborted as exc:
            print(f"[worker {self.w}] OSP exchange aborted: {exc}", flush=True)
        self._transfer(self.osp.bye, "sending BYE")

    def _iterate(self, k: int, batch: int, t_req: float, t_perm: float) -> dict[str, Any]:
        """One OSP iteration (module docstring); returns its telemetry row."""
        t_start = self.ctx.now() - (t_perm - t_req)
        if k == self.kill_at:
            os._exit(17)  # test hook: die abruptly, mid-run
        t0 = time.perf_counter()
        loss = self._compute(k, batch)
        extra = (self.cfg.compute_multipliers[self.w] - 1.0) if self.cfg.compute_multipliers else 0
        delay = extra * (time.perf_counter() - t0) + (
            self.cfg.iteration_delays[self.w] if self.cfg.iteration_delays else 0.0
        )
        if delay > 0:
            time.sleep(delay)
        t1 = time.perf_counter()
        bitmap = self.layout.bitmap(self._gib(k))
        t2 = time.perf_counter()
        grad = self.grad.clone()
        servers = range(self.cfg.servers)
        rs = [self.layout.shard_ranges(s, bitmap, False) for s in servers]
        ics = [self.layout.shard_ranges(s, bitmap, True) for s in servers]
        means = self._transfer(
            lambda: self.osp.exchange("rs", k, [gather(grad, r) for r in rs], batch, loss, t1 - t0),
            f"RS {k}",
        )
        if means is None:
            raise _Aborted(f"a shard answered ABORT to the RS of iteration {k}")
        lr = self.cfg.lr
        for s in servers:  # Eq. 6: global update on RS layers, local on ICS layers
            add_ranges(self.flat, rs[s], means[s], -lr)
            if self.lgp:
                add_ranges(self.flat, ics[s], gather(grad, ics[s]), -lr)
        t3 = time.perf_counter()
        self._drain()  # Eq. 7 for iteration k - 1
        t4 = time.perf_counter()
        self.pending = _ICS(self.osp, k, ics, [gather(grad, r) for r in ics], batch)
        n_ics = sum(bitmap)
        return {
            "iteration": k,
            "batch_size": batch,
            "loss": loss,
            "blocking_s": t_perm - t_req,
            "pull_s": 0.0,
            "compute_s": t1 - t0,
            "push_s": t4 - t1,
            "gib_wait_s": t2 - t1,
            "rs_s": t3 - t2,
            "ics_wait_s": t4 - t3,
            "ics_layers": n_ics,
            "t_start": t_start,
            "t_end": t_start + (t4 - t_req),
            "device": str(self.device),
        }

    def _drain(self) -> None:
        """Wait for the pending ICS exchange and apply Eq. 7 (no-op if none is pending)."""
        job, self.pending = self.pending, None
        if job is None:
            return
        job.thread.join(self.cfg.timeout_s + 30.0)
        if job.thread.is_alive():
            raise TimeoutError(f"ICS of iteration {job.k} did not return")
        if job.error is not None:
            err = job.error

            def reraise() -> None:
                raise err

            self._transfer(reraise, f"ICS {job.k}")  # a dead shard becomes the fatal key
        if job.means is None:
            raise _Aborted(f"a shard answered ABORT to the ICS of iteration {job.k}")
        for s, ranges in enumerate(job.ranges):
            add_ranges(self.flat, ranges, job.means[s], -self.cfg.lr)
            if self.lgp:  # undo the local prediction LGP applied
                add_ranges(self.flat, ranges, job.local[s], self.cfg.lr)

    def _gib(self, k: int) -> list[int]:
        """ICS layers of iteration ``k`` from the store (PS 0 publishes an abort entry instead
        when the run ends before it can compute them)."""
        got = wait_get(self.store, W.gib_key(k), self.cfg.timeout_s, delete=False)
        if got.get("abort"):
            raise _Aborted(f"the run stopped before the GIB of iteration {k}")
        layers = [int(v) for v in got["ics"]]
        self.gibs.append(layers)
        return layers

    def _evaluate(self, k: int) -> None:
        """Test accuracy of the worker's own model (equal to the PS's once ICS is drained)."""
        result: dict[str, Any] = {"worker": self.w}
        if self.job.evaluates:
            nn.utils.vector_to_parameters(self.flat.to(self.device), self.params)
            result.update(self.job.evaluate(self.model, self.device))
            result["buffers"] = encode_buffers(self.model)  # for the saved state_dict
        set_json(self.store, P.EVAL_KEY, result)

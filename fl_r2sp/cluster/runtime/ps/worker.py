"""A worker rank: wait for permission, pull, compute, push, request (Algorithm 1).

Each iteration ``k``: wait for ``grant/<w>/<k>`` (its batch size rides on it; a stop message
ends the loop), pull every shard (under BSP the pull asks for shard version ``k``, so a shard
that is still applying the previous barrier answers once it has), compute the gradient of one
batch on the worker's device, sleep the injected slowdown, push the gradient to every shard,
then set ``req/<w>/<k>`` with the
:class:`~fl_r2sp.cluster.policies.common.base.PushReport` fields and the telemetry of the iteration.

Timing fields (seconds): ``blocking_s`` from the request (or the ready signal) to the
permission, ``permission_s`` the permission's delivery latency (coordinator set -> worker
read, same-machine clocks), ``pull_s``, ``compute_s`` (forward + backward, plus the
compute-multiplier sleep and the injected delay: they emulate a slower machine), ``push_s``.

Heterogeneity: with multiplier ``m`` the worker sleeps ``(m - 1)·c`` after a compute of ``c``
seconds; ``iteration_delays[w]`` adds a fixed sleep. With ``compute_model = "emulated"`` the
compute instead lasts ``cost · batch · m`` on an emulated dedicated device
(:mod:`~fl_r2sp.cluster.runtime.ps.compute_model`; the per-sample cost, shared by every
worker, is ``sample_cost_s`` or measured once by all workers together before the ready
signal). With ``scripted_compute`` the worker does not train: it sleeps the scripted time and
pushes a zero gradient (loss NaN).

Faults: if a transfer with a parameter server fails the worker sets the fatal key naming that
server and leaves. The test hook ``FL_R2SP_CLUSTER_KILL="<worker>:<iteration>"`` makes that
worker's process exit abruptly (``os._exit(17)``) right after its pull of that iteration
(``"<worker>:calibration"``: once every worker is up for the emulated compute's calibration).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from typing import Any

import torch
from torch import nn

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import (
    RankContext,
    gather_live,
    new_store,
    set_json,
    wait_get,
)
from fl_r2sp.cluster.runtime.ps import compute_model
from fl_r2sp.cluster.runtime.ps.links import ShardUnreachable, WorkerLinks
from fl_r2sp.cluster.userjob.job import TrainingJob, encode_buffers

KILL_ENV = "FL_R2SP_CLUSTER_KILL"
#: The kill hook's point "calibration" (``"<worker>:calibration"``), as an iteration number
#: no real iteration has.
CALIBRATION_KILL = -2


def kill_point(hook: str, worker: int) -> int:
    """The iteration at which the kill hook ``hook`` ("<worker>:<iteration>" or
    "<worker>:calibration") stops ``worker``: :data:`CALIBRATION_KILL`, or -1 for never."""
    if not hook or int(hook.split(":")[0]) != worker:
        return -1
    point = hook.split(":")[1]
    return CALIBRATION_KILL if point == "calibration" else int(point)


def worker_seed(seed: int, worker: int) -> int:
    """Seed of worker ``worker``'s batch stream (tests rebuild the same batches from it)."""
    return seed * 1_000_003 + 7919 * (worker + 1)


def pick_device(devices: tuple[str, ...], worker: int, local_rank: int) -> torch.device:
    """Worker ``worker``'s device: ``devices[worker % len]``; "cuda" = GPU local_rank % count.

    Raises
    ------
    RuntimeError
        If a CUDA device is asked for and not available.
    """
    name = devices[worker % len(devices)]
    if name == "cpu":
        return torch.device("cpu")
    count = torch.cuda.device_count()
    index = local_rank % max(count, 1) if name == "cuda" else int(name.split(":")[1])
    if not torch.cuda.is_available() or index >= count:
        raise RuntimeError(f"worker {worker}: device {name!r} not available ({count} GPUs seen)")
    return torch.device("cuda", index)


class Worker:
    """State of one worker rank (model, data, links) and its loop (:meth:`run`)."""

    def __init__(self, ctx: RankContext, barrier: bool) -> None:
        cfg = ctx.cfg
        self.ctx, self.cfg, self.barrier = ctx, cfg, barrier
        self.w = ctx.rank - cfg.servers
        self.device = pick_device(cfg.devices, self.w, ctx.local_rank)
        self.job = TrainingJob(cfg)
        self.model = self.job.build_model().to(self.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.flat = torch.zeros(ctx.num_params)
        self.grad = torch.zeros(ctx.num_params)
        self.links = WorkerLinks(self.w, ctx.bounds, ctx.throttled, cfg.chunk_kb)
        self.store = new_store()
        self.cost: float | None = None  # per-sample cost of the emulated device, if emulated
        self.stream: Any = None
        if not cfg.scripted_compute:
            self.stream = self.job.stream(self.w, worker_seed(cfg.seed, self.w))
        kill = os.environ.get(KILL_ENV, "")
        self.kill_at = kill_point(kill, self.w)

    def run(self) -> None:
        """Iterate until a stop message; report a failed parameter server through the store."""
        try:
            self._loop()
        except TimeoutError as exc:  # a peer or the coordinator went silent: leave, not hang
            print(f"[worker {self.w}] {exc}", flush=True)
            self._bye_best_effort()
        except _ServerFailure as exc:
            set_json(self.store, P.FATAL_KEY, {"rank": self.ctx.rank, "message": str(exc)})
            print(f"[worker {self.w}] {exc}", flush=True)
            self._bye_best_effort()

    def _loop(self) -> None:
        # Warm-up pull: gloo connects a pair of ranks on its first message (~0.4 s here), which
        # would otherwise inflate the first iteration's time and R²SP's estimate of T.
        self._transfer(lambda: self.links.pull(self.flat, 0, 0), "warm-up pull")
        if self.cfg.compute_model == "emulated" and self.stream is not None:
            self.cost = self._base_cost()
        set_json(self.store, P.ready_key(self.w), {"t": self.ctx.now()})
        t_req = time.perf_counter()
        k = 0
        while True:
            try:
                grant = wait_get(self.store, P.grant_key(self.w, k), self.cfg.timeout_s)
            except TimeoutError as exc:
                raise TimeoutError(f"no permission from the coordinator: {exc}") from exc
            t_perm = time.perf_counter()
            latency = max(0.0, self.ctx.now() - float(grant["t"])) if "t" in grant else None
            if grant.get("stop"):
                if grant.get("evaluate"):
                    self._evaluate(k)
                break
            row = self._iterate(k, int(grant["batch_size"]), t_req, t_perm)
            if row is None:
                break  # a shard answered ABORT: the run is ending on an error
            row["permission_s"] = latency
            t_req = time.perf_counter()
            set_json(self.store, P.request_key(self.w, k), row)
            k += 1
        self._transfer(self.links.bye, "sending BYE")

    def _base_cost(self) -> float:
        """The run's shared per-sample cost: ``sample_cost_s``, or (auto) the median of every
        worker's calibration, made at once after all are loaded (:mod:`..compute_model`)."""
        if self.cfg.sample_cost_s is not None:
            return self.cfg.sample_cost_s
        workers, timeout = range(self.cfg.workers), self.cfg.timeout_s
        set_json(self.store, P.calibration_key("up", self.w), {})
        # A peer lost on the way (marked by the coordinator) is not waited for: the others
        # calibrate without it and the scheme's rule decides whether the run goes on.
        try:
            gather_live(self.store, lambda v: P.calibration_key("up", v), workers, timeout)
            if self.kill_at == CALIBRATION_KILL:
                os._exit(17)  # test hook: die abruptly during the calibration
            b = self.cfg.batch_size  # a first batch, not taken from the stream: same data order
            x, y = self.stream.first(b)
            own = compute_model.calibrate(lambda: self._pass(x, y), int(x.shape[0]))
            set_json(self.store, P.calibration_key("cost", self.w), {"cost": own})
            got = gather_live(self.store, lambda v: P.calibration_key("cost", v), workers, timeout)
        except TimeoutError as exc:
            what = "calibrating the emulated devices (--sample-cost auto)"
            raise TimeoutError(f"{what}: {exc}") from exc
        return compute_model.shared_cost([float(got[v]["cost"]) for v in sorted(got)])

    def _iterate(self, k: int, batch: int, t_req: float, t_perm: float) -> dict[str, Any] | None:
        """Pull, compute, push iteration ``k``; return its telemetry (None on ABORT)."""
        t_start = self.ctx.now() - (t_perm - t_req)
        ok = self._transfer(lambda: self.links.pull(self.flat, k if self.barrier else 0, k),
                            f"pulling iteration {k}")  # fmt: skip
        if not ok:
            return None
        if k == self.kill_at:
            os._exit(17)  # test hook: die abruptly, mid-iteration
        t_pulled = time.perf_counter()
        loss = self._compute(k, batch)
        emulated = self._slow_down(time.perf_counter() - t_pulled, batch)
        t_computed = time.perf_counter()
        self._transfer(lambda: self.links.push(self.grad, k, batch), f"pushing iteration {k}")
        t_pushed = time.perf_counter()
        return {
            "iteration": k, "batch_size": batch, "loss": loss, "blocking_s": t_perm - t_req,
            "pull_s": t_pulled - t_perm, "compute_s": t_computed - t_pulled,
            "push_s": t_pushed - t_computed, "t_start": t_start,
            "t_end": t_start + (t_pushed - t_req), "device": str(self.device), **emulated,
        }  # fmt: skip

    def _slow_down(self, compute: float, batch: int) -> dict[str, Any]:
        """Sleep the multiplier's and the injected delay; return the emulation's row fields.

        Real compute model: ``(m - 1)`` × the real compute time. Emulated: until the emulated
        device's ``cost · batch · m`` (:mod:`~fl_r2sp.cluster.runtime.ps.compute_model`).
        """
        m = self.cfg.compute_multipliers[self.w] if self.cfg.compute_multipliers else 1.0
        delay = self.cfg.iteration_delays[self.w] if self.cfg.iteration_delays else 0.0
        fields: dict[str, Any] = {}
        if self.cost is None:
            delay += (m - 1.0) * compute
        else:
            target = compute_model.target_s(self.cost, batch, m)
            compute_model.serve(target, compute)
            fields = {"compute_target_s": target, "cost_per_sample_s": self.cost,
                      "overrun": compute > target}  # fmt: skip
        if delay > 0:
            time.sleep(delay)
        return fields

    def _compute(self, k: int, batch: int) -> float:
        """Load the pulled parameters, compute one batch's gradient into ``self.grad``."""
        if self.cfg.scripted_compute:
            time.sleep(self.cfg.scripted_compute[self.w][k])
            self.grad.zero_()
            return math.nan
        return self._pass(*self.stream.take(batch))

    def _pass(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """Load the pulled parameters, then :meth:`_gradient`: the work an iteration's
        ``compute_s`` times, so the emulated compute's calibration times the same."""
        nn.utils.vector_to_parameters(self.flat.to(self.device), self.params)
        return self._gradient(x, y)

    def _gradient(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """Forward + backward on ``(x, y)`` into ``self.grad``; returns the batch loss."""
        self.model.train()
        self.model.zero_grad(set_to_none=False)
        loss = self.job.loss(self.model, x.to(self.device), y.to(self.device))
        loss.backward()  # type: ignore[no-untyped-call]  # torch leaves backward untyped
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        self.grad.copy_(torch.cat([g.reshape(-1) for g in grads]).cpu())
        return float(loss.item())

    def _evaluate(self, k: int) -> None:
        """Pull the final parameters and report test accuracy and loss under the eval key."""
        result: dict[str, Any] = {"worker": self.w}
        if self.job.evaluates and self._transfer(
            lambda: self.links.pull(self.flat, k if self.barrier else 0, k), "final pull"
        ):
            nn.utils.vector_to_parameters(self.flat.to(self.device), self.params)
            result.update(self.job.evaluate(self.model, self.device))
            result["buffers"] = encode_buffers(self.model)  # for the saved state_dict
        set_json(self.store, P.EVAL_KEY, result)

    def _transfer(self, fn: Any, what: str) -> Any:
        try:
            return fn()
        except ShardUnreachable as exc:
            raise _ServerFailure(f"{exc} (worker {self.w}, {what})") from exc

    def _bye_best_effort(self) -> None:
        # The failed server cannot take it; the live ones do.
        with contextlib.suppress(Exception):
            self.links.bye()


class _ServerFailure(RuntimeError):
    pass

"""Outstanding jobs trained together as one stacked model (``torch.func``), on CPU or CUDA.

Each :meth:`BatchedExecutor.collect` call trains one *stack*: the oldest
outstanding job plus up to ``max_stack - 1`` later ones with the same batch
size (clients with fewer samples than ``batch-size`` train on smaller
batches and stack among themselves), in submission order. The training set
is moved to the device once; each job's batch rows and augmentation are drawn
on the CPU with the job's own seeded generator (the very draws
``train_local`` makes) and applied on the device, so a client's result
differs from the serial one only by floating-point summation order. Which
jobs share a stack depends only on the loop's sequence of submissions and
collections, which the virtual clock fixes, so a seed gives the same stacks
and the same results on every run with the same device.
"""

from __future__ import annotations

import logging
import os

import torch

from fl_r2sp.clients.runtime import ClientRuntime, data_for, job_seed
from fl_r2sp.config import RunConfig
from fl_r2sp.protocol import Job, Reply
from fl_r2sp.server.executor.base import error_reply, self_peak_rss_kb
from fl_r2sp.training.checks import as_tensors, check_label_range
from fl_r2sp.training.schedule import draw_schedule
from fl_r2sp.training.stacked import train_stacked

log = logging.getLogger("fl_r2sp")

#: ``executor-stack = 0``: jobs per stack by device. On a CPU, wide stacks
#: turn convolutions into slow grouped kernels; a GPU takes all it is given.
AUTO_STACK = {"cpu": 16, "cuda": 1024}


def resolve_device(name: str) -> torch.device:
    """``compute-device`` -> torch device: auto = cuda when available, else cpu."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("compute-device='cuda' but torch sees no CUDA device; use 'auto' or 'cpu'")
    if name not in ("cpu", "cuda"):
        raise ValueError(f"compute-device={name!r} is not one of 'auto', 'cpu', 'cuda'")
    return torch.device(name)


def deterministic_cuda() -> None:
    """Make CUDA kernels reproducible and exact float32 (process-wide settings).

    cuBLAS needs its workspace size fixed before its first use; cuDNN must
    not pick algorithms by timing; TF32 would round convolutions to 10-bit
    mantissas, far outside the float tolerance promised against serial.
    """
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)


class BatchedExecutor:
    """Trains outstanding jobs as stacks of up to ``max_stack`` models.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration (virtual clock only: a stack has no per-job
        wall time).
    runtime : ClientRuntime
        Supplies the model, the modelled compute time and the injected delays.
    device : torch.device
        Where to train.
    max_stack : int (default: 0 = :data:`AUTO_STACK` of the device type)
        Most jobs per stack (bounds device memory).
    """

    def __init__(
        self, cfg: RunConfig, runtime: ClientRuntime, device: torch.device, max_stack: int = 0
    ) -> None:
        if cfg.clock != "virtual":
            raise ValueError(
                "executor='batched' needs clock='virtual' (a stack has no "
                "per-job wall time); use executor='processes' with clock='wall'"
            )
        if device.type == "cuda":
            deterministic_cuda()
        self.cfg, self.runtime, self.device = cfg, runtime, device
        self.max_stack = max_stack or AUTO_STACK.get(device.type, 16)
        data = data_for(cfg)
        x, y = as_tensors(data.train.x, data.train.y, "batched executor")
        if cfg.augment and x.dim() != 4:
            raise ValueError(f"augment=true needs images (n, C, H, W), got {tuple(x.shape)}")
        check_label_range(y, data.train.num_classes, "batched executor")
        self._x, self._y = x.to(device), y.to(device)  # the training set, once
        self._rows = [torch.from_numpy(p).long() for p in data.partition.indices]
        self._pending: list[Job] = []
        self._ready: list[Reply] = []

    def _batch(self, cid: int) -> int:
        return min(self.cfg.batch_size, len(self._rows[cid]))

    def submit(self, job: Job) -> None:
        """Queue ``job`` for a later stack."""
        if not 0 <= job.cid < len(self._rows):
            raise ValueError(f"partition id {job.cid} out of range 0..{len(self._rows) - 1}")
        self._pending.append(job)

    def collect(self, timeout: float) -> list[Reply]:
        """Train the next stack (unless replies are ready) and return its replies."""
        if not self._ready and self._pending:
            b = self._batch(self._pending[0].cid)
            stack = [j for j in self._pending if self._batch(j.cid) == b][: self.max_stack]
            chosen = {id(j) for j in stack}
            self._pending = [j for j in self._pending if id(j) not in chosen]
            try:
                self._ready = self._train(stack)
            except Exception as exc:  # as a crashing ClientApp: every job of the stack fails
                log.warning("batched stack of %d jobs failed: %s", len(stack), exc)
                self._ready = [error_reply(j, exc) for j in stack]
        out, self._ready = self._ready, []
        return out

    def _train(self, stack: list[Job]) -> list[Reply]:
        cfg, seed = self.cfg, self.cfg.seed
        rows, offsets, flips = [], [], []
        for job in stack:
            part = self._rows[job.cid]
            sched = draw_schedule(
                len(part),
                cfg.batch_size,
                cfg.local_iterations,
                job_seed(seed, job.cid, job.index),
                cfg.augment,
            )
            rows.append(part[sched.indices])
            if sched.offsets is not None and sched.flips is not None:
                offsets.append(sched.offsets)
                flips.append(sched.flips)
        dev = self.device
        crops = (torch.stack(offsets).to(dev), torch.stack(flips).to(dev)) if offsets else None
        res = train_stacked(
            self.runtime.model,
            [j.weights for j in stack],
            self._x,
            self._y,
            torch.stack(rows).to(dev),
            crops,
            lr=cfg.lr,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
        )
        return [  # a configured attack rewrites the reply on the "client" side, as runtime.run
            self.runtime.attacks.apply(
                job,
                Reply(
                    job.cid,
                    job.index,
                    job.tag,
                    weights=res.weights[k].copy(),
                    num_examples=len(self._rows[job.cid]),
                    loss=float(res.mean_losses[k]),
                    compute_s=self.runtime.compute_seconds(job.cid),
                    delay_s=self.runtime.delay.sample_for(seed, job.cid, job.index),
                ),
            )
            for k, job in enumerate(stack)
        ]

    def cancel(self, cid: int) -> None:
        """Drop ``cid``'s queued job or unreturned reply."""
        self._pending = [j for j in self._pending if j.cid != cid]
        self._ready = [r for r in self._ready if r.cid != cid]

    def outstanding(self) -> int:
        """Jobs queued plus replies not yet returned."""
        return len(self._pending) + len(self._ready)

    def peak_rss_kb(self) -> dict[str, int]:
        """Peak memory of this process (and the device's peak allocation on CUDA)."""
        out = {"main": self_peak_rss_kb()}
        if self.device.type == "cuda":
            out["cuda"] = int(torch.cuda.max_memory_allocated(self.device) // 1024)
        return out

    def close(self) -> None:
        """Drop queued jobs and the device copy of the training set."""
        self._pending.clear()
        self._ready.clear()
        self._x = self._y = torch.empty(0)

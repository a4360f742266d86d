"""Jobs trained together as one stacked model (``torch.func``) on one device.

A :class:`StackTrainer` holds the training set on its device once; each job's
batch rows and augmentation are drawn on the CPU with the job's own seeded
generator (the very draws ``train_local`` makes) and applied on the device,
so a client's result differs from the serial one only by floating-point
summation order. The batched executor
(:mod:`fl_r2sp.fl.server.executor.batched`) trains its stacks with one in its own
process; the CPU worker processes (:mod:`fl_r2sp.fl.server.executor.pool`,
``kind="stacks"``) each hold one.
"""

from __future__ import annotations

import logging
import os

import torch

from fl_r2sp.fl.clients.runtime import ClientRuntime, data_for, job_seed
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.executor.base import error_reply
from fl_r2sp.training.checks import as_tensors, check_label_range
from fl_r2sp.training.schedule import draw_schedule
from fl_r2sp.training.stacked import StackedStep, StackKernels, train_stacked

log = logging.getLogger("fl_r2sp")


def stack_kernels(cfg: RunConfig) -> StackKernels:
    """The run config's ``executor-conv``, ``executor-compile`` and ``executor-cuda-graphs``."""
    return StackKernels(cfg.executor_conv, cfg.executor_compile, cfg.executor_cuda_graphs)


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


class StackTrainer:
    """Trains lists of jobs as one stacked model on one device; the data live there once.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration.
    runtime : ClientRuntime
        Supplies the model, the modelled compute time and the injected delays.
    device : torch.device
        Where to train.

    Raises
    ------
    ValueError
        ``executor-cuda-graphs = true`` on a device other than CUDA.
    """

    def __init__(self, cfg: RunConfig, runtime: ClientRuntime, device: torch.device) -> None:
        kernels = stack_kernels(cfg)
        kernels.check_device(device)
        if device.type == "cuda":
            deterministic_cuda()
        self.cfg, self.runtime, self.device = cfg, runtime, device
        data = data_for(cfg)
        x, y = as_tensors(data.train.x, data.train.y, "batched executor")
        if cfg.augment and x.dim() != 4:
            raise ValueError(f"augment=true needs images (n, C, H, W), got {tuple(x.shape)}")
        check_label_range(y, data.train.num_classes, "batched executor")
        self._x, self._y = x.to(device), y.to(device)  # the training set, once
        self._rows = [torch.from_numpy(p).long() for p in data.partition.indices]
        self._step = StackedStep(runtime.model, kernels)  # built once: compiled code is reused

    def train(self, stack: list[Job]) -> list[Reply]:
        """Train ``stack`` together; one reply per job, in order."""
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
            step=self._step,
        )
        return [
            Reply(
                job.cid,
                job.index,
                job.tag,
                weights=res.weights[k].copy(),
                num_examples=len(self._rows[job.cid]),
                loss=float(res.mean_losses[k]),
                compute_s=self.runtime.compute_seconds(job.cid),
                delay_s=self.runtime.delay.sample_for(seed, job.cid, job.index),
            )
            for k, job in enumerate(stack)
        ]

    def train_safely(self, stack: list[Job]) -> list[Reply]:
        """:meth:`train`, with an exception failing every job of the stack (as a crashing
        ClientApp would) instead of the run."""
        try:
            return self.train(stack)
        except Exception as exc:
            log.warning("batched stack of %d jobs failed: %s", len(stack), exc)
            return [error_reply(j, exc) for j in stack]

    def release(self) -> None:
        """Drop the device copy of the training set."""
        self._x = self._y = torch.empty(0)

"""One-machine launcher: torch's elastic agent in this process, as ``torchrun --standalone``.

:func:`launch` validates the configuration, checks what the ranks will need (CUDA devices,
the dataset files) and only then starts S + N ranks (a parameter-server run) or N ranks (an
all-reduce-family run) through ``torch.distributed.launcher.api.elastic_launch`` with a
standalone c10d rendezvous on a free local port (the agent hosts the job's TCPStore). It
returns rank 0's summary.

Faults and time limits:

* torch's elastic agent is all-or-nothing: when a rank *process* exits with a non-zero code
  it stops every other rank. The launcher then raises :class:`ClusterRunError` naming the
  failed rank and its role. (The scheme-dependent behaviour, BSP stopping and ASP/SSP/R²SP
  continuing without a lost worker, applies when the runtime itself detects the loss: ranks
  started as separate processes, as the tests do, or a worker machine that vanishes under a
  multi-node torchrun.)
* every rank ends itself ``run_timeout_s`` + 60 s after it started; the launcher sends itself
  SIGTERM ``run_timeout_s`` + 120 s after launch as a last resort, which makes the agent stop
  the ranks and raise.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from typing import Any

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.common.run_config import RunConfig
from fl_r2sp.cluster.runtime.rank import run_rank

LAUNCHER_GRACE_S = 120.0


class ClusterRunError(RuntimeError):
    """A cluster run ended with an error (a rank died, timed out, or reported a failure).

    ``summary`` holds rank 0's summary when the run got as far as writing one.
    """

    def __init__(self, message: str, summary: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.summary = summary


def base_of(cfg: RunConfig) -> ClusterConfig:
    """The shared :class:`ClusterConfig` of any family's run config (itself, or its ``base``).

    Raises
    ------
    TypeError
        If ``cfg`` has neither form.
    """
    base = cfg if isinstance(cfg, ClusterConfig) else getattr(cfg, "base", None)
    if not isinstance(base, ClusterConfig):
        raise TypeError(f"{type(cfg).__name__} is not a cluster run config")
    return base


def preflight(cfg: RunConfig) -> None:
    """Check what the ranks need before starting them (any family's run config).

    Raises
    ------
    RuntimeError
        If a CUDA device is requested and not available.
    FileNotFoundError
        If the dataset's files are missing (CIFAR-10 is loaded once; this also fills the
        decoded-array cache the ranks then read).
    """
    cfg = base_of(cfg)
    if any(d.startswith("cuda") for d in cfg.devices):
        import torch

        count = torch.cuda.device_count()
        if not torch.cuda.is_available() or count == 0:
            raise RuntimeError(f"--devices {','.join(cfg.devices)} needs CUDA, but no GPU is "
                               "visible")  # fmt: skip
        for d in cfg.devices:
            if ":" in d and int(d.split(":")[1]) >= count:
                raise RuntimeError(f"device {d} requested, but only {count} GPUs are visible")
    if cfg.dataset == "cifar10" and not cfg.scripted_compute:
        from fl_r2sp.cluster.data import make_dataset

        make_dataset(cfg.model, cfg.dataset, cfg.data_dir or None, cfg.seed, include_test=False,
                     max_train=cfg.max_train)  # fmt: skip


def launch(cfg: RunConfig, start_method: str = "forkserver") -> dict[str, Any]:
    """Validate, check, start every rank on this machine and return rank 0's summary.

    Parameters
    ----------
    cfg : RunConfig
        The run: a :class:`ClusterConfig` (parameter servers) or another family's config,
        e.g. a :class:`~fl_r2sp.cluster.runtime.reduce.config.ReduceRunConfig`.
    start_method : str, default "forkserver"
        How the agent starts rank processes: "forkserver" (one server process imports torch,
        ranks fork from it: ~5x faster start on a small machine), "spawn" or "fork".

    Raises
    ------
    ValueError
        On bad configuration (before any rank starts).
    ClusterRunError
        If a rank died or the run reported an error.
    """
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    cfg.validate()
    preflight(cfg)
    if start_method == "forkserver":
        import multiprocessing

        # One server process imports torch once; every rank forks from it (much faster
        # than spawn, which imports torch in every rank).
        multiprocessing.get_context("forkserver").set_forkserver_preload(
            ["torch", "fl_r2sp.cluster.runtime.rank"]
        )
    lc = LaunchConfig(
        min_nodes=1, max_nodes=1, nproc_per_node=cfg.world_size,
        run_id=f"fl_r2sp-{uuid.uuid4().hex[:12]}", rdzv_backend="c10d",
        rdzv_endpoint="localhost:0", rdzv_configs={"join_timeout": base_of(cfg).timeout_s},
        max_restarts=0, monitor_interval=0.2, start_method=start_method,
    )  # fmt: skip
    backstop = threading.Timer(cfg.run_timeout_s + LAUNCHER_GRACE_S,
                               lambda: os.kill(os.getpid(), signal.SIGTERM))  # fmt: skip
    backstop.daemon = True
    backstop.start()
    try:
        results = elastic_launch(lc, run_rank)(cfg)
    except ChildFailedError as exc:
        raise ClusterRunError(describe_failures(cfg, exc.failures)) from None
    except SignalException as exc:
        raise ClusterRunError(
            f"the run was stopped by signal {exc.sigval} (run timeout "
            f"{cfg.run_timeout_s:.0f}s + {LAUNCHER_GRACE_S:.0f}s?)"
        ) from None
    finally:
        backstop.cancel()
    summary = results.get(0)
    if not isinstance(summary, dict):
        raise ClusterRunError("rank 0 returned no summary")
    if summary.get("status") != "ok":
        raise ClusterRunError(
            f"run failed: {summary.get('error')} (run dir {summary['run_dir']})", summary
        )
    return summary


def describe_failures(cfg: RunConfig, failures: dict[int, Any]) -> str:
    """'worker 1 (rank 3) exited with code 17; ...' for every failed rank, first failure first.

    The ranks below ``world_size - workers`` are parameter servers (none in a run without).
    """
    servers = cfg.world_size - base_of(cfg).workers
    parts = []
    for rank, failure in sorted(failures.items(), key=lambda kv: kv[1].timestamp):
        role = (f"parameter server {rank}" if rank < servers
                else f"worker {rank - servers}")  # fmt: skip
        code = failure.exitcode
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        parts.append(f"{role} (rank {rank}) {how}")
    return ("; ".join(parts) + ". torch's elastic agent stops every rank when one rank process "
            "fails, so the run ended.")  # fmt: skip

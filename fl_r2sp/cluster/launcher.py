"""The one command's launcher: check what the ranks need, run them supervised, judge the end.

:func:`launch` validates the configuration, checks what the ranks will need (CUDA devices,
the dataset files) and only then starts S + N ranks (a parameter-server run) or N ranks (a
serverless run) as plain processes under the supervisor of :mod:`.local` (not torch's elastic
agent, which would stop every rank on the loss of one worker). It returns rank 0's summary
when the run ended well (a scheme that continues without a lost worker ends well and lists
it under ``lost_workers``), and raises :class:`ClusterRunError` otherwise: rank 0 reported a
failure (BSP or OSP lost a worker, a parameter server was lost), rank 0 itself was lost, the
time limit passed, or the run was interrupted. Every ending leaves ``summary.json`` with its
``status`` and reason in the run folder.

Across machines the ranks run under torchrun (c10d rendezvous):
``torchrun ... -m fl_r2sp.cluster.rank <the same flags>``.
"""

from __future__ import annotations

from typing import Any

from fl_r2sp.cluster.local import base_of, run_local
from fl_r2sp.cluster.runtime.common.run_config import ClusterRunConfig


class ClusterRunError(RuntimeError):
    """A cluster run ended badly; ``status`` is its summary's ("failed", "timeout",
    "interrupted") and ``summary`` the summary written to the run folder (None if none)."""

    def __init__(self, message: str, summary: dict[str, Any] | None = None,
                 status: str = "failed") -> None:  # fmt: skip
        super().__init__(message)
        self.summary = summary
        self.status = status


def preflight(cfg: ClusterRunConfig) -> None:
    """Check what the ranks need before starting them (any family's run config).

    Raises
    ------
    RuntimeError
        If a CUDA device is requested and not available.
    FileNotFoundError
        If the dataset's files are missing (CIFAR-10 is loaded once; this also fills the
        decoded-array cache the ranks then read).
    ImportPathError
        If the training job breaks its contract (:func:`~fl_r2sp.cluster.userjob.job.check_job`:
        the message names the model's, dataset's, loss's or evaluation's path).
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
    if not cfg.scripted_compute:
        from fl_r2sp.cluster.userjob.job import check_job

        check_job(cfg)


def launch(cfg: ClusterRunConfig, start_method: str = "forkserver") -> dict[str, Any]:
    """Validate, check, run every rank on this machine supervised; return rank 0's summary.

    Parameters
    ----------
    cfg : ClusterRunConfig
        The run: a :class:`ClusterConfig` (parameter servers) or another family's config,
        e.g. a :class:`~fl_r2sp.cluster.runtime.reduce.config.ReduceRunConfig`.
    start_method : str, default "forkserver"
        How rank processes start: "forkserver" (one server process imports torch, ranks fork
        from it: ~5x faster start on a small machine) or "spawn".

    Raises
    ------
    ValueError
        On bad configuration (before any rank starts).
    ClusterRunError
        If the run did not end well (see the module docstring).
    """
    cfg.validate()
    preflight(cfg)
    run = run_local(cfg, start_method=start_method)
    summary = run.summary
    if summary is None:
        from fl_r2sp.cluster.telemetry import read_json

        written = read_json(run.run_dir / "summary.json")
        raise ClusterRunError(f"{run.reason} (run dir {run.run_dir})", written, run.ending)
    if summary.get("status") != "ok":
        raise ClusterRunError(f"run failed: {summary.get('error')} (run dir {summary['run_dir']})",
                              summary, str(summary.get("status")))  # fmt: skip
    return summary

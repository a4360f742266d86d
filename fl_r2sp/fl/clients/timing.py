"""The modelled duration of a job, as a pure function of (run config, client, job index).

The virtual clock times every job by ``compute-s + delay-s``: the device model's speed
for the client times ``local-iterations`` (times its per-job jitter), plus the delay
model's sample. :class:`~fl_r2sp.fl.clients.runtime.ClientRuntime` reports exactly these
figures in its replies; the server computes them here for a client that reports none (a
stock Flower ClientApp), and :mod:`fl_r2sp.fl.flower.timed` lets such a client report them.
For a registry model (the data set's default one unless ``model`` names another) no model is
built and no data loaded: the profile's device speed of that model stands for the user's. For
a model given by import path, :func:`iteration_seconds` builds it once to count its
multiply-accumulates (the profile's fit), exactly as the project's ClientApp does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fl_r2sp.emulation.delays import DelayModel, make_delay
from fl_r2sp.emulation.devices import DeviceModel, make_device_model
from fl_r2sp.emulation.profiles import estimated_iteration_seconds, get_profile
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.importpath import is_import_path
from fl_r2sp.models import resolve_model_name

if TYPE_CHECKING:
    from torch import nn

__all__ = ["JobTiming", "iteration_seconds"]


def iteration_seconds(cfg: RunConfig, model: nn.Module | None = None) -> float:
    """Seconds per local iteration of ``cfg``'s model on the reference device.

    Parameters
    ----------
    cfg : RunConfig
        Reads ``model``, ``dataset`` and ``network``.
    model : nn.Module or None (default: None)
        The model already built (a user's import-path model); None = build it when needed.

    Returns
    -------
    float
        The profile's figure for a registry model; for a model given by import path, the
        profile's fit on its multiply-accumulates per example
        (:func:`~fl_r2sp.emulation.profiles.estimated_iteration_seconds`).
    """
    name = resolve_model_name(cfg.model, cfg.dataset)
    if not is_import_path(name):
        return get_profile(cfg.network).iteration_seconds(name)
    from fl_r2sp.datasets import dataset_info
    from fl_r2sp.models import build_model
    from fl_r2sp.models.user import macs_per_sample

    shape, classes = dataset_info(cfg.dataset)
    built = build_model(name, num_classes=classes, seed=0) if model is None else model
    return estimated_iteration_seconds(macs_per_sample(built, shape))


@dataclass
class JobTiming:
    """Modelled compute time and injected delay of each job of a run.

    Parameters
    ----------
    cfg : RunConfig
        Reads ``model``, ``dataset``, ``network``, ``device``, ``delay``, ``seed`` and
        ``local-iterations``.
    """

    cfg: RunConfig
    device: DeviceModel = field(init=False)
    delay_model: DelayModel = field(init=False)

    def __post_init__(self) -> None:
        self.device = make_device_model(self.cfg.device, iteration_seconds(self.cfg))
        self.delay_model = make_delay(self.cfg.delay)

    def lower_bound(self, cid: int) -> float:
        """Client ``cid``'s compute time without jitter (a bound of every job's)."""
        return self.device.seconds_per_iteration(self.cfg.seed, cid) * self.cfg.local_iterations

    def compute(self, cid: int, index: int) -> float:
        """Modelled compute seconds of job ``index`` of ``cid`` (lower bound x jitter)."""
        return self.lower_bound(cid) * self.device.job_multiplier(self.cfg.seed, cid, index)

    def delay(self, cid: int, index: int) -> float:
        """Injected delay in seconds of job ``index`` of ``cid`` (0 with ``delay=none``)."""
        return float(self.delay_model.sample_for(self.cfg.seed, cid, index))

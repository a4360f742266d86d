"""The modelled duration of a job, as a pure function of (run config, client, job index).

The virtual clock times every job by ``compute-s + delay-s``: the device model's speed
for the client times ``local-iterations`` (times its per-job jitter), plus the delay
model's sample. :class:`~fl_r2sp.fl.clients.runtime.ClientRuntime` reports exactly these
figures in its replies; the server computes them here for a client that reports none (a
stock Flower ClientApp), and :mod:`fl_r2sp.fl.flower.timed` lets such a client report them.
No model is built and no data loaded: the device speed of the registry model named by
``model`` (the data set's default one unless set) stands for the user's model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fl_r2sp.emulation.delays import DelayModel, make_delay
from fl_r2sp.emulation.devices import DeviceModel, make_device_model
from fl_r2sp.emulation.profiles import get_profile
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.models import resolve_model_name

__all__ = ["JobTiming"]


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
        name = resolve_model_name(self.cfg.model, self.cfg.dataset)
        base = get_profile(self.cfg.network).iteration_seconds(name)
        self.device = make_device_model(self.cfg.device, base)
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

"""The federated half: FL-R²SP, BSP, ASP, FedAsync and FedBuff on Flower.

Split as cluster mode is, bottom up:

* :mod:`.protocol`: the job and reply messages between server and clients;
* :mod:`.policies`: plain-Python decisions of each scheme (no Flower, torch or clock), their
  parameter records and the scheme registry;
* :mod:`.config`: :class:`~fl_r2sp.fl.config.RunConfig`, every run-config key with its default
  (:mod:`.config_checks` validates Flower run-config text);
* :mod:`.clients`: client-side training (our ClientApp's work, attacks);
* :mod:`.server`: the event loops (virtual and wall clock), executors, admission, checkpoints,
  the in-process runner :func:`~fl_r2sp.fl.server.runner.run`;
* :mod:`.flower`: everything that touches Flower: the Strategy classes, the Grid transport,
  the ServerApp and ClientApp, deployments.

The public names are served lazily here and from :mod:`fl_r2sp`.
"""

from __future__ import annotations

from fl_r2sp.lazy import lazy_exports

#: Public name -> the module that defines it.
EXPORTS: dict[str, str] = {
    "FLR2SP": "fl_r2sp.fl.flower.strategy",
    "BSP": "fl_r2sp.fl.flower.strategy",
    "ASP": "fl_r2sp.fl.flower.strategy",
    "FedAsync": "fl_r2sp.fl.flower.strategy",
    "FedBuff": "fl_r2sp.fl.flower.strategy",
    "EventDrivenStrategy": "fl_r2sp.fl.flower.strategy",
    "strategy_for": "fl_r2sp.fl.flower.strategy",
    "RunConfig": "fl_r2sp.fl.config",
    "run": "fl_r2sp.fl.server.runner",
    "RunOutput": "fl_r2sp.fl.server.run_output",
}

__all__ = list(EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)

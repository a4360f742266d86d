"""Server-side model helpers: the initial global model and central evaluation.

Only the server (the runner, the Flower ServerApp and the stock-FedAvg
baseline) builds the initial model and scores the global model on the
central test split; clients never do, so these live on the server side and
``fl_r2sp.fl.clients`` stays free of any import of ``fl_r2sp.fl.server``.
"""

from __future__ import annotations

import numpy as np
import torch

from fl_r2sp.datasets import dataset_info
from fl_r2sp.fl.clients.runtime import data_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.models import build_model, resolve_model_name
from fl_r2sp.models.weights import arrays_to_state, flatten, state_to_arrays, unflatten
from fl_r2sp.training import evaluate, set_torch_threads


class CentralEvaluator:
    """Evaluates flat global weights on the central test split.

    Parameters
    ----------
    cfg : RunConfig
        Selects data set and model. With ``executor = "batched"`` the model is
        scored on the executor's ``compute-device`` (a paper-size run on a GPU
        would otherwise spend most of its time scoring on one CPU thread);
        otherwise on the CPU.
    """

    def __init__(self, cfg: RunConfig) -> None:
        set_torch_threads(cfg.torch_threads)
        data = data_for(cfg)
        self.test = data.test
        name = resolve_model_name(cfg.model, cfg.dataset)
        self.model = build_model(name, num_classes=data.train.num_classes, seed=0)
        self.template = state_to_arrays(self.model)
        if cfg.executor == "batched":
            from fl_r2sp.fl.server.executor.batched import resolve_device

            self.model.to(resolve_device(cfg.compute_device))

    def __call__(self, weights: np.ndarray) -> tuple[float, float]:
        """Return (loss, accuracy) of ``weights`` on the test split."""
        arrays_to_state(self.model, unflatten(weights, self.template))
        with torch.no_grad():
            res = evaluate(self.model, self.test.x, self.test.y)
        return res.loss, res.accuracy


def initial_weights(cfg: RunConfig) -> np.ndarray:
    """Flat initial model, seeded by ``cfg.seed``."""
    name = resolve_model_name(cfg.model, cfg.dataset)
    model = build_model(name, num_classes=dataset_info(cfg.dataset)[1], seed=cfg.seed)
    return flatten(state_to_arrays(model))

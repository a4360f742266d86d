"""The start check of a run that names the user's own model or dataset by import path.

``model`` and ``dataset`` take a registry name or ``"package.module:factory"``; the
contracts are :mod:`fl_r2sp.models.user` and :mod:`fl_r2sp.datasets.user` (docs/user-code.md
shows both with an example). :func:`check_user_code` runs them before anything else of a
run: in the in-process runner (:func:`fl_r2sp.fl.server.runner.run`) and in the run-config
check that ``scripts/main.sh``, ``scripts/deploy_local.py`` and the ServerApp run first
(:func:`fl_r2sp.fl.flower.run_config_check.check_run_config`), so a violation ends the run
before any client trains, with exit status 2 from the scripts.
"""

from __future__ import annotations

import numpy as np

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.importpath import ImportPathError, is_import_path

__all__ = ["check_user_code"]


def check_user_code(cfg: RunConfig) -> None:
    """Resolve and check the user's model and dataset paths of ``cfg``; no-op without one.

    The dataset is loaded (both splits, memoised), the model built twice and run on two
    examples shaped like the dataset's (zeros: a built-in dataset is not loaded for this).

    Raises
    ------
    ImportPathError
        ``"model '<path>': ..."`` or ``"dataset '<path>': ..."``, naming what was wrong.
    ValueError
        ``model='auto'`` with a user's dataset (no default model exists for it).
    """
    if not (is_import_path(cfg.model) or is_import_path(cfg.dataset)):
        return
    from fl_r2sp.datasets import dataset_info
    from fl_r2sp.models import model_input_shape, resolve_model_name
    from fl_r2sp.models.user import check_user_model

    name = resolve_model_name(cfg.model, cfg.dataset)
    shape, classes = dataset_info(cfg.dataset)  # a user's dataset is loaded and checked here
    if is_import_path(name):
        check_user_model(name, classes, np.zeros((2, *shape), np.float32))
    elif model_input_shape(name) != shape:
        raise ImportPathError(
            "dataset",
            cfg.dataset,
            f"its inputs are {shape} but model {name!r} takes "
            f"{model_input_shape(name)}; bring a model by import path too",
        )

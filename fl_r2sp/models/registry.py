"""Model registry: names, input shapes, dataset compatibility, deterministic construction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from fl_r2sp.importpath import is_import_path

from .cnn import FedAvgCNN, LeNetCNN
from .lstm import KwsLSTM
from .mlp import DigitsMLP
from .resnet import resnet20
from .user import build_user_model

#: Datasets each input kind comes from (the names of ``fl_r2sp.fl.config.Dataset``).
_IMAGES = frozenset({"cifar10"})
_AUDIO = frozenset({"kws", "kws-audio"})
_DIGITS = frozenset({"digits"})

#: Model ``auto`` picks for each dataset.
AUTO_MODEL: dict[str, str] = {"digits": "mlp", "cifar10": "cnn", "kws": "lstm", "kws-audio": "lstm"}


@dataclass(frozen=True)
class ModelSpec:
    """How to build one registered model and what it accepts.

    Attributes
    ----------
    name : str
        Registry key (``--run-config model=...``).
    builder : Callable[[int], nn.Module]
        ``builder(num_classes)`` returns a freshly initialised model.
    input_shape : tuple[int, ...]
        Shape of one example, without the batch dimension.
    datasets : frozenset[str]
        Datasets whose examples have that shape.
    description : str
        One line for help texts.
    """

    name: str
    builder: Callable[[int], nn.Module]
    input_shape: tuple[int, ...]
    datasets: frozenset[str]
    description: str


MODELS: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        ModelSpec(
            "mlp", DigitsMLP, (64,), _DIGITS, "64-64-10 MLP for sklearn digits (4,810 params)"
        ),
        ModelSpec("cnn", LeNetCNN, (3, 32, 32), _IMAGES, "LeNet-5-sized CNN (62,006 params)"),
        ModelSpec(
            "cnn-fedavg", FedAvgCNN, (3, 32, 32), _IMAGES, "FedAvg two-conv CNN (2.16M params)"
        ),
        ModelSpec(
            "resnet20",
            resnet20,
            (3, 32, 32),
            _IMAGES,
            "CIFAR ResNet-20, 1x1-conv shortcuts (272,474 params = the paper's 1.09 MB)",
        ),
        ModelSpec(
            "resnet20-a",
            partial(resnet20, shortcut="A"),
            (3, 32, 32),
            _IMAGES,
            "CIFAR ResNet-20, He et al.'s zero-padding shortcuts (269,722 params)",
        ),
        ModelSpec(
            "lstm", KwsLSTM, (98, 40), _AUDIO, "2x64 LSTM over 98x40 log-mels (61,066 params)"
        ),
    )
}


def _spec(name: str) -> ModelSpec:
    if name not in MODELS:
        hint = " (resolve 'auto' with resolve_model_name first)" if name == "auto" else ""
        raise ValueError(
            f"unknown model {name!r}{hint}; choose one of {sorted(MODELS)} or an import path "
            "'package.module:factory' (docs/user-code.md)"
        )
    return MODELS[name]


def resolve_model_name(model: str, dataset: str) -> str:
    """Turn a run-config ``model`` value into a registry name valid for ``dataset``.

    Parameters
    ----------
    model : str
        A registry name, ``"auto"`` (digits -> mlp, cifar10 -> cnn,
        kws / kws-audio -> lstm), or a user's import path ``"package.module:factory"``
        (returned as is; :mod:`fl_r2sp.models.user` checks it against the data).
    dataset : str
        One of ``digits``, ``cifar10``, ``kws``, ``kws-audio``, or a user's import path.

    Returns
    -------
    str
        The registry name or the model's import path.

    Raises
    ------
    ValueError
        Unknown dataset or model, a model whose input shape the dataset
        does not produce (e.g. ``lstm`` on ``cifar10``), or ``auto`` with a
        user's dataset (there is no default model for it).
    """
    if is_import_path(model):
        return model
    if is_import_path(dataset):
        if model == "auto":
            raise ValueError(
                f"model='auto' has no default for the user dataset {dataset!r}: set model to "
                f"one of {sorted(MODELS)} or to an import path 'package.module:factory'"
            )
        _spec(model)  # a registry model on user data: the start check runs a forward pass
        return model
    if dataset not in AUTO_MODEL:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {sorted(AUTO_MODEL)}")
    if model == "auto":
        return AUTO_MODEL[dataset]
    spec = _spec(model)
    if dataset not in spec.datasets:
        ok = sorted(n for n, s in MODELS.items() if dataset in s.datasets)
        raise ValueError(
            f"model {model!r} takes inputs of shape {spec.input_shape}, which dataset "
            f"{dataset!r} does not produce; use model='auto' or one of {ok}"
        )
    return model


def build_model(name: str, num_classes: int = 10, seed: int = 0) -> nn.Module:
    """Build a freshly initialised model, identical for identical arguments.

    Parameters
    ----------
    name : str
        Registry name (see ``MODELS``) or a user's import path (contract:
        :mod:`fl_r2sp.models.user`); ``"auto"`` is not accepted here.
    num_classes : int, default 10
        Number of output logits.
    seed : int, default 0
        Seed of the initial weights.

    Returns
    -------
    torch.nn.Module
        The model in training mode, float32, on the CPU.
    """
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    if is_import_path(name):
        return build_user_model(name, num_classes, seed)
    spec = _spec(name)
    # torch's layer initialisers draw from the global generator; fork_rng saves
    # and restores it, so construction is seeded without touching the caller's RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return spec.builder(num_classes)


def model_input_shape(name: str) -> tuple[int, ...]:
    """Shape of one input example of model ``name`` (no batch dimension)."""
    return _spec(name).input_shape


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (``requires_grad``), excluding buffers."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def serialized_size(model: nn.Module) -> int:
    """Bytes one model transfer carries: every state-dict tensor as float32.

    This is ``4 * len(flatten(state_to_arrays(model)))``, the flat float32
    vector the server and clients exchange. It equals ``4 *
    count_parameters(model)`` for models without buffers (mlp, cnn,
    cnn-fedavg, lstm). BatchNorm models also carry running mean and variance
    (float) and ``num_batches_tracked`` (one int64 scalar per BN layer, sent
    as a 4-byte float like the rest): ResNet-20 has 272,474 parameters but
    274,063 state values, i.e. 1,096,252 bytes.
    """
    return 4 * sum(int(t.numel()) for t in model.state_dict().values())

"""Models of the cluster mode, built deterministically by name.

=============  ===============  ==========  ===================================================
name           input            parameters  what
=============  ===============  ==========  ===================================================
mlp            (64,) float      4,810       64-64-10 MLP; tiny, for tests
mlp-wide       (64,) float      1,228,810   64-16384-10 MLP; 4.9 MB that costs little compute,
                                            for network-bound benchmarks
resnet32       (3, 32, 32)      464,154     He et al.'s CIFAR ResNet-32: 3 stages x 5 basic
                                            blocks, option-A (zero-padding) shortcuts,
                                            PyTorch's default init of the classifier
alexnet        (3, 32, 32)      2,472,266   CIFAR AlexNet-style (see ``vision``)
vgg16          (3, 32, 32)      14,728,266  CIFAR VGG16-style with BatchNorm (see ``vision``)
transformer    (2, L) int64     936,970     small encoder-decoder (see ``seq2seq``)
=============  ===============  ==========  ===================================================

Counts are for 10 classes (for the transformer: a vocabulary of 10). The ResNet reuses the
federated side's :class:`fl_r2sp.models.resnet.CifarResNet` and the MLPs its
:class:`fl_r2sp.models.mlp.DigitsMLP`. Every model maps a batch ``x`` to logits whose last
dimension is ``num_classes``; :func:`batch_loss` is the training loss of all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from fl_r2sp.cluster.userjob.catalog import (
    FLAT_DATASETS,
    IMAGE_DATASETS,
    SEQ_DATASETS,
    check_model_dataset,
)
from fl_r2sp.models.mlp import DigitsMLP
from fl_r2sp.models.registry import count_parameters
from fl_r2sp.models.resnet import CifarResNet

from .seq2seq import BOS, Seq2SeqTransformer
from .vision import CifarAlexNet, CifarVGG16


@dataclass(frozen=True)
class ClusterModelSpec:
    """How to build one model and which data it takes.

    Attributes
    ----------
    name : str
        Registry key (``--model``).
    builder : Callable[[int], nn.Module]
        ``builder(num_classes)`` returns a freshly initialised model.
    input_shape : tuple[int, ...]
        Shape of one example without the batch dimension (-1: any sequence length).
    input_dtype : torch.dtype
        float32 for images and vectors, int64 for token ids.
    datasets : frozenset[str]
        Dataset names whose examples fit the model.
    """

    name: str
    builder: Callable[[int], nn.Module]
    input_shape: tuple[int, ...]
    input_dtype: torch.dtype
    datasets: frozenset[str]


def _resnet32(num_classes: int) -> nn.Module:
    net = CifarResNet(num_classes=num_classes, blocks_per_stage=5, shortcut="A")
    # The shared CifarResNet draws the classifier from the MSRA normal too (its FL runs depend
    # on that, bit for bit); here the classifier gets PyTorch's default nn.Linear init, whose
    # small logits start training near ln(10) instead of ~4-7 with the MSRA draw.
    net.fc.reset_parameters()
    return net


def _mlp_wide(num_classes: int) -> nn.Module:
    return DigitsMLP(num_classes=num_classes, hidden=16384)


_IMG = (3, 32, 32)
MODELS: dict[str, ClusterModelSpec] = {
    s.name: s
    for s in (
        ClusterModelSpec("mlp", DigitsMLP, (64,), torch.float32, FLAT_DATASETS),
        ClusterModelSpec("mlp-wide", _mlp_wide, (64,), torch.float32, FLAT_DATASETS),
        ClusterModelSpec("resnet32", _resnet32, _IMG, torch.float32, IMAGE_DATASETS),
        ClusterModelSpec("alexnet", CifarAlexNet, _IMG, torch.float32, IMAGE_DATASETS),
        ClusterModelSpec("vgg16", CifarVGG16, _IMG, torch.float32, IMAGE_DATASETS),
        ClusterModelSpec("transformer", Seq2SeqTransformer, (2, -1), torch.int64, SEQ_DATASETS),
    )
}
MODEL_NAMES: tuple[str, ...] = tuple(MODELS)


def model_spec(name: str) -> ClusterModelSpec:
    """The :class:`ClusterModelSpec` of ``name``; ValueError naming the choices if unknown."""
    if name not in MODELS:
        raise ValueError(f"unknown cluster model {name!r}; choose one of {list(MODEL_NAMES)}")
    return MODELS[name]


def build_cluster_model(name: str, num_classes: int = 10, seed: int = 0) -> nn.Module:
    """A fresh float32 CPU model ``name`` (see :data:`MODEL_NAMES`) with ``num_classes``
    outputs (the vocabulary, BOS included, for ``transformer``) [10], its initial weights drawn
    from ``seed`` [0]: identical arguments give identical weights."""
    spec = model_spec(name)
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    # Initialisers use torch's global generator: fork_rng seeds it here and restores it after.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return spec.builder(num_classes)


#: Number of trainable parameters (``requires_grad``); buffers (BatchNorm statistics) excluded.
param_count = count_parameters


def cross_entropy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``outputs`` against ``targets`` (classes, or one token per
    position): the loss of every built-in model, and a user job's default loss.

    Works for ``(batch, classes)`` logits with ``(batch,)`` labels and for ``(batch, length,
    vocab)`` logits with ``(batch, length)`` targets alike, so the runtime needs no per-model
    code.
    """
    return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))


def batch_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """:func:`cross_entropy` of ``model(x)`` against ``y``."""
    return cross_entropy(model(x), y)


__all__ = [
    "BOS",
    "MODELS",
    "MODEL_NAMES",
    "ClusterModelSpec",
    "CifarAlexNet",
    "CifarVGG16",
    "Seq2SeqTransformer",
    "batch_loss",
    "build_cluster_model",
    "check_model_dataset",
    "cross_entropy",
    "model_spec",
    "param_count",
]

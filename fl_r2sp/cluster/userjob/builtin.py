"""The built-in models and datasets as factories of the user contract.

Each registry name of :mod:`~fl_r2sp.cluster.userjob.catalog` is the import path of one
function here, written as a user writes theirs (:mod:`fl_r2sp.cluster.userjob`): a model
factory takes no argument (the job seeds torch's generator around the call), a dataset
factory takes the keywords it names of ``seed``, ``rank``, ``world_size``, ``data_dir`` and
returns a map-style dataset (a :class:`~fl_r2sp.cluster.data.TensorSplit`). So
``--model fl_r2sp.cluster.userjob.builtin:mlp`` is the run of ``--model mlp``, bit for bit.
"""

from __future__ import annotations

from torch import nn

from fl_r2sp.cluster.data import TensorSplit, make_dataset
from fl_r2sp.cluster.models import MODELS, cross_entropy

__all__ = [
    "alexnet",
    "cifar10",
    "copy",
    "cross_entropy",
    "mlp",
    "mlp_wide",
    "resnet32",
    "reverse",
    "synthetic_flat",
    "synthetic_image",
    "transformer",
    "vgg16",
]

#: Output size of every built-in model: ten classes, or the sequence tasks' vocabulary of 10.
NUM_CLASSES = 10


def mlp() -> nn.Module:
    """The 64-64-10 MLP (``--model mlp``)."""
    return MODELS["mlp"].builder(NUM_CLASSES)


def mlp_wide() -> nn.Module:
    """The 64-16384-10 MLP (``--model mlp-wide``)."""
    return MODELS["mlp-wide"].builder(NUM_CLASSES)


def resnet32() -> nn.Module:
    """CIFAR ResNet-32 (``--model resnet32``)."""
    return MODELS["resnet32"].builder(NUM_CLASSES)


def alexnet() -> nn.Module:
    """CIFAR AlexNet-style (``--model alexnet``)."""
    return MODELS["alexnet"].builder(NUM_CLASSES)


def vgg16() -> nn.Module:
    """CIFAR VGG16-style (``--model vgg16``)."""
    return MODELS["vgg16"].builder(NUM_CLASSES)


def transformer() -> nn.Module:
    """The small encoder-decoder of the sequence tasks (``--model transformer``)."""
    return MODELS["transformer"].builder(NUM_CLASSES)


def cifar10(data_dir: str | None = None) -> TensorSplit:
    """CIFAR-10's training split, read locally (``--dataset cifar10``; never downloads)."""
    return make_dataset("resnet32", "cifar10", data_dir, 0, include_test=False).train


def synthetic_flat(seed: int = 0) -> TensorSplit:
    """The seeded Gaussian clusters as 64-vectors (``--dataset synthetic`` for the MLPs)."""
    return make_dataset("mlp", "synthetic", None, seed, include_test=False).train


def synthetic_image(seed: int = 0) -> TensorSplit:
    """The seeded Gaussian clusters as 3x32x32 images (``--dataset synthetic`` for the CNNs)."""
    return make_dataset("resnet32", "synthetic", None, seed, include_test=False).train


def copy(seed: int = 0) -> TensorSplit:
    """The seeded copy task's token sequences (``--dataset copy``)."""
    return make_dataset("transformer", "copy", None, seed, include_test=False).train


def reverse(seed: int = 0) -> TensorSplit:
    """The seeded reversal task's token sequences (``--dataset reverse``)."""
    return make_dataset("transformer", "reverse", None, seed, include_test=False).train

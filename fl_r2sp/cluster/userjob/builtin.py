"""The built-in models and datasets as factories of the user contract.

Each registry name of :mod:`~fl_r2sp.cluster.userjob.catalog` is the import path of one
function here, written as a user writes theirs (:mod:`fl_r2sp.cluster.userjob`): a model
factory takes no argument (the job seeds torch's generator around the call), a dataset
factory takes the keywords it names of ``seed``, ``rank``, ``world_size``, ``data_dir`` and
returns a map-style dataset (a :class:`~fl_r2sp.cluster.data.TensorSplit`). So
``--model fl_r2sp.cluster.userjob.builtin:mlp`` is the run of ``--model mlp``, bit for bit.
:func:`evaluate_on_test_split` is the evaluation of a built-in dataset (its test split).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
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
    "evaluate_on_test_split",
    "transformer",
    "vgg16",
]

#: Output size of every built-in model: ten classes, or the sequence tasks' vocabulary of 10.
NUM_CLASSES = 10
#: Test examples per forward pass of :func:`evaluate_on_test_split`.
EVAL_BATCH = 500


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


@torch.no_grad()
def evaluate_on_test_split(model: nn.Module, x: torch.Tensor, y: torch.Tensor, limit: int,
             device: torch.device, seed: int = 0) -> dict[str, float]:  # fmt: skip
    """Accuracy (per class label, or per token) and mean loss on ``limit`` test examples.

    The examples are a seeded random subset (all of them if ``limit`` covers the split): the
    packed CIFAR-10 archives are sorted by class, so the first ``limit`` would be biased.
    BatchNorm layers use the evaluating worker's own running statistics (they are buffers,
    not parameters, and stay on the workers).
    """
    model.eval()
    total_n = int(y.shape[0])
    n = min(limit, total_n)
    order = torch.randperm(total_n, generator=torch.Generator().manual_seed(seed))[:n]
    correct, total, loss_sum = 0, 0, 0.0
    for a in range(0, n, EVAL_BATCH):
        idx = order[a : a + EVAL_BATCH]
        xb, yb = x[idx].to(device), y[idx].to(device)
        logits = model(xb)
        flat = logits.reshape(-1, logits.shape[-1])
        loss_sum += float(F.cross_entropy(flat, yb.reshape(-1), reduction="sum"))
        correct += int((logits.argmax(-1) == yb).sum())
        total += int(yb.numel())
    model.train()
    return {"test_accuracy": correct / max(total, 1), "test_loss": loss_sum / max(total, 1),
            "test_examples": n}  # fmt: skip

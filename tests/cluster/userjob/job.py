"""A user's training job, defined outside the package as a user writes it: a small network, a
map-style dataset, a loss and an evaluation (plus broken factories for the refusal tests)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

FEATURES, CLASSES, EXAMPLES = 6, 3, 240


class TinyNet(nn.Module):
    """6 -> 12 -> 3 with a ReLU: the user's own module."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 12), nn.ReLU(), nn.Linear(12, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)  # type: ignore[no-any-return]


def bn_net() -> nn.Module:
    """A model with BatchNorm: its running statistics are buffers, not parameters."""
    return nn.Sequential(nn.Linear(FEATURES, 12), nn.BatchNorm1d(12), nn.ReLU(),
                         nn.Linear(12, CLASSES))  # fmt: skip


def tiny_net() -> nn.Module:
    """The model factory: takes nothing (the job seeds torch's generator around it)."""
    return TinyNet()


class Blobs(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Three seeded Gaussian blobs; a map-style dataset yielding ``(x, y)``."""

    def __init__(self, seed: int, n: int = EXAMPLES, features: int = FEATURES) -> None:
        gen = torch.Generator().manual_seed(seed)
        means = 3.0 * torch.randn(CLASSES, features, generator=gen)
        self.y = torch.randint(0, CLASSES, (n,), generator=gen)
        self.x = means[self.y] + torch.randn(n, features, generator=gen)

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


def blobs(seed: int, rank: int, world_size: int) -> Blobs:
    """The dataset factory: every worker sees the whole set (sampled with its own seed)."""
    assert 0 <= rank < world_size
    return Blobs(seed)


def smooth_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The user's loss: cross-entropy with label smoothing."""
    return F.cross_entropy(outputs, targets, label_smoothing=0.05)


def accuracy(model: nn.Module, device: torch.device) -> dict[str, float]:
    """The user's evaluation on a held-out draw of the blobs."""
    test = Blobs(seed=0, n=120)
    pred = model(test.x.to(device)).argmax(-1).cpu()
    return {"test_accuracy": float((pred == test.y).float().mean()), "blob_examples": 120.0}


def batches(seed: int, rank: int) -> object:
    """An iterable dataset: a DataLoader over the blobs (its own batch size)."""
    from torch.utils.data import DataLoader

    gen = torch.Generator().manual_seed(seed * 100 + rank)
    return DataLoader(Blobs(seed), batch_size=8, shuffle=True, generator=gen)


# ---- broken factories (each is refused before any rank starts)
def not_a_module() -> dict[str, int]:
    """A model factory that returns the wrong type."""
    return {"layers": 2}


def wide_blobs(seed: int) -> Blobs:
    """Samples with 5 features, which TinyNet (6 inputs) cannot take."""
    return Blobs(seed, features=5)


def vector_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """A loss that forgot to reduce: one value per example."""
    return F.cross_entropy(outputs, targets, reduction="none")


NOT_CALLABLE = 3

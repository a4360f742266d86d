"""A user's model and data inside the Flower app's folder, as a user's app would hold them.

Not a test module: Flower bundles it with the app (it leaves ``test_*.py`` out), so the
ServerApp and ClientApp processes import ``tests.e2e.user_nets:build`` / ``:load`` from the
bundle. Used by ``test_e2e_user_code.py``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

FEATURES, CLASSES = 8, 3


def build(num_classes: int, seed: int) -> nn.Module:
    """8 -> 16 -> classes MLP."""
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, num_classes))


def load(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Three Gaussian blobs in 8 dimensions (as torch tensors); a fixed generator per split."""
    rng = np.random.default_rng(0 if split == "train" else 1)
    n = 240 if split == "train" else 90
    y = np.arange(n) % CLASSES
    x = np.eye(CLASSES, FEATURES)[y] * 3.0 + rng.normal(size=(n, FEATURES))
    return torch.from_numpy(x).float(), torch.from_numpy(y)


def wrong_logits(num_classes: int, seed: int) -> nn.Module:
    """Breaks the contract: one logit too many."""
    return nn.Linear(FEATURES, num_classes + 1)

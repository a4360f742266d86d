"""Local training and central evaluation on plain NumPy arrays.

``train_local`` runs tau SGD iterations on a client's (x, y), in place and
bit-for-bit deterministic given its seed and a fixed torch thread count
(``set_torch_threads``); ``evaluate`` reports mean loss and accuracy.
"""

from __future__ import annotations

import torch

from .augment import random_crop_flip
from .evaluate import EvalResult, evaluate
from .local import TrainResult, batch_schedule, train_local


def set_torch_threads(k: int) -> int:
    """Fix torch's intra-op thread count to ``k`` and return the previous count.

    Float results of wide layers differ between 1 and 2 threads, and Ray sets
    ``OMP_NUM_THREADS`` from each actor's CPU share, so every process that
    trains must call this with the same ``k`` for runs to be reproducible
    (``docs/architecture.md`` §8, determinism rules).
    """
    if k < 1:
        raise ValueError(f"thread count must be >= 1, got {k}")
    previous = torch.get_num_threads()
    torch.set_num_threads(k)
    return previous


__all__ = [
    "EvalResult",
    "TrainResult",
    "batch_schedule",
    "evaluate",
    "random_crop_flip",
    "set_torch_threads",
    "train_local",
]

"""Local training: tau iterations of mini-batch SGD on one client's data, deterministic."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .augment import random_crop_flip
from .checks import as_tensors, check_label_range


@dataclass(frozen=True)
class TrainResult:
    """Outcome of one ``train_local`` call (the weights are updated in the model).

    Attributes
    ----------
    num_examples : int
        Number of local training examples (``len(x)``), for weighted means.
    mean_loss : float
        Mean training loss over the iterations (every batch has the same size,
        so this is also the per-example mean).
    iterations : int
        SGD steps taken.
    """

    num_examples: int
    mean_loss: float
    iterations: int


def batch_schedule(
    n: int, batch_size: int, iterations: int, generator: torch.Generator
) -> Iterator[torch.Tensor]:
    """Yield ``iterations`` index batches, reshuffling the n examples every epoch.

    Every batch holds ``b = min(batch_size, n)`` distinct indices. An epoch
    is one permutation cut into ``n // b`` batches; its ``n % b`` leftover
    indices are skipped (they come up again after the next reshuffle). Equal
    batches keep the cost of an iteration constant, which the emulation
    charges per iteration. A client with fewer than ``batch_size`` samples
    trains on all of them, reshuffled, at every iteration.
    """
    b = min(batch_size, n)
    done = 0
    while done < iterations:
        perm = torch.randperm(n, generator=generator)
        take = min(n // b, iterations - done)
        for k in range(take):
            yield perm[k * b : (k + 1) * b]
        done += take


def _check_hparams(iterations: int, batch_size: int, lr: float, momentum: float, wd: float) -> None:
    if iterations < 1:
        raise ValueError(f"iterations (tau) must be >= 1, got {iterations}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    if not wd >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {wd}")


def train_local(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    iterations: int,
    batch_size: int = 32,
    lr: float = 0.01,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    seed: int = 0,
    augment: bool = False,
) -> TrainResult:
    """Run ``iterations`` steps of SGD on (x, y), updating ``model`` in place.

    Deterministic: the same model weights, data, arguments and torch thread
    count (see ``set_torch_threads``) give bit-identical weights. Every random
    choice (batch order, augmentation) comes from one ``torch.Generator``
    seeded with ``seed``; the optimizer (and its momentum buffer) is fresh
    each call, as a client starts every round from the server's model.

    Parameters
    ----------
    model : torch.nn.Module
        Model to train (put in training mode); its weights are the start point.
    x : np.ndarray
        Model-ready float features, shape (n, ...).
    y : np.ndarray
        Integer labels, shape (n,).
    iterations : int
        tau, the number of SGD steps (>= 1).
    batch_size : int, default 32
        Mini-batch size; a client with n < batch_size uses batches of n.
    lr : float, default 0.01
        Learning rate.
    momentum : float, default 0.0
        SGD momentum, in [0, 1).
    weight_decay : float, default 0.0
        L2 penalty added by the optimizer.
    seed : int, default 0
        Seed of batch order and augmentation.
    augment : bool, default False
        Random crop (pad 4) + horizontal flip per batch; needs (n, C, H, W) images.

    Returns
    -------
    TrainResult
        ``num_examples = n``, mean loss of the steps, steps taken.
    """
    _check_hparams(iterations, batch_size, lr, momentum, weight_decay)
    xt, yt = as_tensors(x, y, "train_local")
    if augment and xt.dim() != 4:
        raise ValueError(
            f"augment=True needs images (n, C, H, W), got x of shape {tuple(xt.shape)}"
        )
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    model.train()
    total = torch.zeros((), dtype=torch.float64)
    for step, idx in enumerate(batch_schedule(len(xt), batch_size, iterations, gen)):
        xb, yb = xt[idx], yt[idx]
        if augment:
            xb = random_crop_flip(xb, gen)
        logits = model(xb.to(device))
        if step == 0:
            check_label_range(yt, logits.shape[1], "train_local")
        loss = F.cross_entropy(logits, yb.to(device))
        opt.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)  # Tensor.backward itself is untyped
        opt.step()
        total += loss.detach().double().cpu()
    return TrainResult(
        num_examples=len(xt), mean_loss=float(total) / iterations, iterations=iterations
    )

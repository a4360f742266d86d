"""Central evaluation: mean cross-entropy and accuracy, without gradients."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .checks import as_tensors, check_label_range


@dataclass(frozen=True)
class EvalResult:
    """Loss and accuracy of a model on a labelled set.

    Attributes
    ----------
    loss : float
        Mean cross-entropy per example.
    accuracy : float
        Fraction of examples whose arg-max logit is the label, in [0, 1].
    num_examples : int
        Size of the evaluated set.
    """

    loss: float
    accuracy: float
    num_examples: int


def evaluate(model: nn.Module, x: np.ndarray, y: np.ndarray, batch_size: int = 512) -> EvalResult:
    """Evaluate ``model`` on (x, y) in eval mode (BatchNorm uses running statistics).

    Parameters
    ----------
    model : torch.nn.Module
        Model to evaluate; its training/eval mode is restored afterwards.
    x : np.ndarray
        Model-ready float features, shape (n, ...).
    y : np.ndarray
        Integer labels, shape (n,).
    batch_size : int, default 512
        Examples per forward pass (memory only; results do not depend on it
        beyond float summation order).

    Returns
    -------
    EvalResult
        Mean loss, accuracy and n.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    xt, yt = as_tensors(x, y, "evaluate")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    loss_sum = 0.0
    correct = 0
    try:
        with torch.no_grad():
            for start in range(0, len(xt), batch_size):
                xb = xt[start : start + batch_size].to(device)
                yb = yt[start : start + batch_size].to(device)
                logits = model(xb)
                if start == 0:
                    check_label_range(yt, logits.shape[1], "evaluate")
                loss_sum += float(F.cross_entropy(logits, yb, reduction="sum"))
                correct += int((logits.argmax(dim=1) == yb).sum())
    finally:
        model.train(was_training)
    n = len(xt)
    return EvalResult(loss=loss_sum / n, accuracy=correct / n, num_examples=n)

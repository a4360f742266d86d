"""Input validation shared by local training and evaluation (errors before any compute)."""

from __future__ import annotations

import warnings

import numpy as np
import torch


def as_tensors(x: np.ndarray, y: np.ndarray, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a (features, labels) pair and wrap it as CPU tensors without copying float32 data.

    Parameters
    ----------
    x : np.ndarray
        Model-ready features, shape (n, ...), any floating dtype (cast to float32).
    y : np.ndarray
        Integer class labels, shape (n,), values >= 0 (cast to int64).
    what : str
        Name of the caller, used in error messages.

    Raises
    ------
    ValueError
        Empty data, mismatched lengths, non-float features, non-integer or
        negative labels, or non-finite features.
    """
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim < 2:
        raise ValueError(f"{what}: x must have shape (n, ...) with a batch axis, got {x.shape}")
    if y.ndim != 1 or len(y) != len(x):
        raise ValueError(f"{what}: y must have shape ({len(x)},) to match x, got {y.shape}")
    if len(x) == 0:
        raise ValueError(f"{what}: no examples (x is empty); give the client at least one sample")
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"{what}: x must be float (model-ready, normalised), got {x.dtype}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"{what}: y must hold integer class ids, got dtype {y.dtype}")
    if y.min() < 0:
        raise ValueError(f"{what}: labels must be >= 0, found {int(y.min())}")
    if not np.isfinite(x).all():
        raise ValueError(f"{what}: x contains NaN or infinite values")
    with warnings.catch_warnings():
        # Cached datasets may be read-only (memory-mapped); torch warns on
        # wrapping them, but training and evaluation only ever read x and y.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        yt = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
    return xt, yt


def check_label_range(y: torch.Tensor, num_outputs: int, what: str) -> None:
    """Raise ``ValueError`` if a label is not a valid index into the model's logits."""
    top = int(y.max())
    if top >= num_outputs:
        raise ValueError(
            f"{what}: label {top} but the model has only {num_outputs} outputs; "
            f"build the model with num_classes > {top}"
        )

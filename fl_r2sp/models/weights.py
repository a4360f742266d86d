"""Weights exchange between torch models and the flat NumPy vectors the server uses.

A model's weights travel as its state dict, in ``state_dict()`` order, as
one flat vector (``flatten``) of the model's float type: float32, or float64
when any array is float64 (a scikit-learn or NumPy model keeps its precision:
no float32 round trip). Integer buffers (BatchNorm's
``num_batches_tracked``) travel as floats too and are rounded back on
``unflatten``; float32 represents integers exactly up to 2**24, far beyond
any batch count reached here (and PyTorch only reads the counter when a BN
layer has ``momentum=None``, which no model here uses).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn


def state_to_arrays(model: nn.Module) -> list[np.ndarray]:
    """Copy every state-dict tensor of ``model`` to a NumPy array, in state-dict order.

    Parameters
    ----------
    model : torch.nn.Module
        Any model (parameters and buffers are both included).

    Returns
    -------
    list[np.ndarray]
        Independent copies with the tensors' shapes and dtypes.
    """
    return [t.detach().cpu().numpy().copy() for t in model.state_dict().values()]


def arrays_to_state(model: nn.Module, arrays: Sequence[np.ndarray]) -> None:
    """Load ``arrays`` (state-dict order) into ``model`` in place.

    Each array is cast to its tensor's dtype (integer tensors get rounded
    values). Raises ``ValueError`` naming the first mismatch if the count or
    any shape differs from the model's state dict.
    """
    state = model.state_dict()
    if len(arrays) != len(state):
        raise ValueError(
            f"got {len(arrays)} arrays but the model's state dict has {len(state)} tensors; "
            "were the arrays produced by state_to_arrays on the same architecture?"
        )
    new_state: dict[str, torch.Tensor] = {}
    for (key, ref), arr in zip(state.items(), arrays, strict=True):
        arr = np.asarray(arr)
        if tuple(arr.shape) != tuple(ref.shape):
            raise ValueError(
                f"array for {key!r} has shape {tuple(arr.shape)}, model expects "
                f"{tuple(ref.shape)}; check the model name and num_classes"
            )
        t = torch.from_numpy(np.array(arr))  # copy: never alias the caller's buffer
        if not ref.dtype.is_floating_point:
            t = torch.round(t.double()) if t.dtype.is_floating_point else t
        new_state[key] = t.to(ref.dtype)
    model.load_state_dict(new_state, strict=True)


def flat_dtype(arrays: Sequence[np.ndarray]) -> type[np.floating]:
    """The flat vector's dtype for ``arrays``: float64 if any array is float64, else float32.

    Integer and bool arrays do not widen it (a BatchNorm counter keeps a float32 model
    float32); float16 and bfloat16-as-float32 models aggregate in float32.
    """
    wide = any(np.asarray(a).dtype == np.float64 for a in arrays)
    return np.float64 if wide else np.float32


def flatten(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenate ``arrays`` (raveled, C order) into one vector of :func:`flat_dtype`.

    Float32 models give a float32 vector (as before), float64 models a float64 one, so
    :func:`unflatten` restores every float64 value bit for bit. An empty sequence gives an
    empty float32 vector.
    """
    if len(arrays) == 0:
        return np.zeros(0, dtype=np.float32)
    dtype = flat_dtype(arrays)
    return np.concatenate([np.asarray(a, dtype=dtype).ravel() for a in arrays])


def unflatten(vec: np.ndarray, like: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Split a flat vector into arrays shaped and typed like ``like`` (inverse of ``flatten``).

    Parameters
    ----------
    vec : np.ndarray
        1-D vector with exactly ``sum(a.size for a in like)`` entries.
    like : Sequence[np.ndarray]
        Template arrays; only their shapes and dtypes are used.

    Returns
    -------
    list[np.ndarray]
        New arrays. Integer dtypes are rounded to the nearest integer, bool
        dtypes thresholded at 0.5, float dtypes cast.
    """
    vec = np.asarray(vec)
    expected = sum(int(np.asarray(a).size) for a in like)
    if vec.ndim != 1 or vec.size != expected:
        raise ValueError(
            f"flat vector has shape {vec.shape}, expected ({expected},) to fill "
            f"{len(like)} arrays; was it flattened from the same model?"
        )
    out: list[np.ndarray] = []
    start = 0
    for ref in like:
        ref = np.asarray(ref)
        chunk = vec[start : start + ref.size].reshape(ref.shape)
        start += ref.size
        if ref.dtype == np.bool_:
            out.append(chunk >= 0.5)
        elif np.issubdtype(ref.dtype, np.integer):
            out.append(np.rint(chunk).astype(ref.dtype))
        else:
            out.append(chunk.astype(ref.dtype, copy=True))
    return out


def get_flat_weights(model: nn.Module) -> np.ndarray:
    """The model's full state as one float32 vector: ``flatten(state_to_arrays(model))``."""
    return flatten(state_to_arrays(model))


def set_flat_weights(model: nn.Module, vec: np.ndarray) -> None:
    """Load a vector made by ``get_flat_weights`` (same architecture) into ``model``."""
    arrays_to_state(model, unflatten(vec, state_to_arrays(model)))

"""A user's own labelled dataset, named by import path (``dataset = "my_pkg.data:load"``).

The contract (docs/user-code.md repeats it with an example):

* ``dataset`` is ``"package.module:factory"`` (resolved by :func:`fl_r2sp.importpath.resolve`).
* ``factory(split)`` is called with ``split = "train"`` and ``split = "test"`` and returns
  that split as one of:

  - an :class:`~fl_r2sp.datasets.base.ArrayDataset` (its ``num_classes`` and ``groups``
    are kept; ``groups`` feeds the ``speaker`` partitioner);
  - a pair ``(x, y)`` of arrays (NumPy, torch tensors or anything ``numpy.asarray``
    takes): ``x`` with one row per example, ``y`` integer labels;
  - a map-style dataset of ``(x, y)`` pairs (``len(ds)`` and ``ds[i]``, e.g. a
    torchvision dataset with a ``ToTensor`` transform); it is read into memory once.

* Inputs become float32 arrays ``(N, *input_shape)``, as the model sees them (normalise in
  the factory); labels become int64 in ``0 .. num_classes - 1``. Without an
  ``ArrayDataset``, ``num_classes`` is one more than the largest label of either split.
* Both splits are non-empty, finite, and have the same input shape. The ``test`` split is
  the central test set; ``train`` is partitioned among the clients by the run's
  ``partitioner`` (paper, paper-strict, dirichlet, iid: any labelled dataset; speaker:
  needs ``groups``), exactly as a built-in dataset is.
* The factory is called once per split per process and must return the same data every
  time (a reproducible run, a resumed checkpoint and the process executor's workers all
  load it again).

A violation raises :class:`~fl_r2sp.importpath.ImportPathError`, ``"dataset '<path>':
<what was wrong>"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from fl_r2sp.importpath import ImportPathError, resolve

from .base import ArrayDataset

__all__ = ["load_user_dataset", "user_dataset_info"]

_WHAT = "dataset"


def _bad(spec: str, problem: str) -> ImportPathError:
    return ImportPathError(_WHAT, spec, problem)


def _pairs_to_arrays(spec: str, split: str, ds: Any) -> tuple[Any, Any]:
    """Stack a map-style dataset of ``(x, y)`` pairs into two arrays."""
    xs, ys = [], []
    for i in range(len(ds)):
        item = ds[i]
        if not isinstance(item, Sequence | tuple) or len(item) != 2:
            raise _bad(spec, f"{split} item {i} is a {type(item).__name__}, not an (x, y) pair")
        xs.append(np.asarray(item[0]))
        ys.append(np.asarray(item[1]))
    if not xs:
        raise _bad(spec, f"the {split} split is empty")
    try:
        return np.stack(xs), np.stack(ys)
    except ValueError as exc:
        raise _bad(spec, f"{split} items differ in shape ({exc})") from None


def _as_arrays(spec: str, split: str, got: Any) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    """``(x, y, num_classes or None, groups or None)`` of what the factory returned."""
    if isinstance(got, ArrayDataset):
        return got.x, got.y, got.num_classes, got.groups
    if isinstance(got, tuple) and len(got) == 2:
        x, y = got
    elif hasattr(got, "__len__") and hasattr(got, "__getitem__") and not isinstance(got, str):
        x, y = _pairs_to_arrays(spec, split, got)
    else:
        raise _bad(
            spec,
            f"factory('{split}') returned a {type(got).__name__}; expected an ArrayDataset, "
            "an (x, y) pair of arrays or a dataset of (x, y) pairs",
        )
    try:
        xa = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float32)
        ya = np.asarray(y.detach().cpu() if hasattr(y, "detach") else y)
    except (TypeError, ValueError) as exc:
        raise _bad(spec, f"{split} x or y is not numeric ({exc})") from None
    return xa, ya, None, None


def _checked(spec: str, split: str, got: Any) -> tuple[ArrayDataset, int | None]:
    x, y, num_classes, groups = _as_arrays(spec, split, got)
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim < 2 or len(x) == 0:
        raise _bad(spec, f"{split} x has shape {x.shape}; need (N >= 1, *input_shape)")
    if y.ndim != 1 or len(y) != len(x):
        raise _bad(spec, f"{split} y has shape {y.shape}; need ({len(x)},), one label per row")
    if not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.bool_)):
        raise _bad(spec, f"{split} labels are {y.dtype}; need integers 0 .. num_classes - 1")
    if y.min() < 0:
        raise _bad(spec, f"{split} has a negative label ({int(y.min())})")
    if not np.isfinite(x).all():
        raise _bad(spec, f"{split} x holds NaN or infinite values")
    y = y.astype(np.int64)
    classes = num_classes if num_classes is not None else int(y.max()) + 1
    if int(y.max()) >= classes:
        raise _bad(spec, f"{split} label {int(y.max())} >= num_classes={classes}")
    data = ArrayDataset(x=x, y=y, num_classes=classes, groups=groups, name=f"{spec}/{split}")
    return data, num_classes


@lru_cache(maxsize=8)
def _load_both(spec: str) -> tuple[ArrayDataset, ArrayDataset]:
    factory = resolve(spec, _WHAT)
    loaded = {}
    for split in ("train", "test"):
        try:
            got = factory(split)
        except ImportPathError:
            raise
        except Exception as exc:  # the user's code may raise anything
            raise _bad(spec, f"factory('{split}') raised {type(exc).__name__}: {exc}") from exc
        loaded[split] = _checked(spec, split, got)
    (train, k_train), (test, k_test) = loaded["train"], loaded["test"]
    if train.input_shape != test.input_shape:
        raise _bad(
            spec, f"train inputs are {train.input_shape} but test inputs are {test.input_shape}"
        )
    # One class count for both splits: the ArrayDataset's, else the labels' maximum.
    classes = k_train or k_test or max(train.num_classes, test.num_classes)
    for part in (train, test):
        if int(part.y.max()) >= classes:
            raise _bad(spec, f"{part.name} label {int(part.y.max())} >= num_classes={classes}")
    return (
        ArrayDataset(train.x, train.y, classes, train.groups, train.name),
        ArrayDataset(test.x, test.y, classes, test.groups, test.name),
    )


def load_user_dataset(spec: str, split: str) -> ArrayDataset:
    """Split ``split`` of the user's dataset ``spec``, checked against the contract.

    Both splits are loaded and checked together (memoised per process), so a bad
    test split fails before training starts.

    Raises
    ------
    ImportPathError
        ``"dataset '<spec>': <what was wrong>"`` (see the module docstring).
    """
    train, test = _load_both(spec)
    return train if split == "train" else test


def user_dataset_info(spec: str) -> tuple[tuple[int, ...], int]:
    """``(input_shape, num_classes)`` of the user's dataset ``spec`` (loads it)."""
    train, _ = _load_both(spec)
    return train.input_shape, train.num_classes

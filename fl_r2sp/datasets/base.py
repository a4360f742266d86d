"""The in-memory dataset type shared by loaders, partitioners and clients."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class ArrayDataset:
    """A labelled dataset held as NumPy arrays, ready for a model.

    Attributes
    ----------
    x : np.ndarray
        float32 inputs, model-ready: ``(N, 3, 32, 32)`` normalized for CIFAR-10,
        ``(N, 98, 40)`` standardized log-mel frames for KWS, ``(N, 64)`` in
        [0, 1] for digits.
    y : np.ndarray
        int64 labels in ``0 .. num_classes - 1``.
    num_classes : int
        Number of classes.
    groups : np.ndarray or None
        Per-sample group id (speaker id strings for KWS), else ``None``.
    name : str
        Dataset name and split, e.g. ``"cifar10/train"``.
    """

    x: np.ndarray
    y: np.ndarray
    num_classes: int
    groups: np.ndarray | None
    name: str

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(f"{self.name}: x has {len(self.x)} rows but y has {len(self.y)}")
        if self.groups is not None and len(self.groups) != len(self.y):
            raise ValueError(
                f"{self.name}: groups has {len(self.groups)} rows but y has {len(self.y)}"
            )

    def __len__(self) -> int:
        return int(len(self.y))

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input, e.g. ``(3, 32, 32)``."""
        return tuple(int(d) for d in self.x.shape[1:])

    def subset(self, indices: np.ndarray, name: str | None = None) -> ArrayDataset:
        """Rows ``indices`` (in that order) as a new dataset (copies the rows).

        Parameters
        ----------
        indices : np.ndarray
            Integer row indices.
        name : str or None, default None
            Name of the result; ``None`` keeps this dataset's name.
        """
        idx = np.asarray(indices, dtype=np.int64)
        return ArrayDataset(
            x=self.x[idx],
            y=self.y[idx],
            num_classes=self.num_classes,
            groups=None if self.groups is None else self.groups[idx],
            name=self.name if name is None else name,
        )

    def label_counts(self) -> np.ndarray:
        """Number of samples per class, length ``num_classes``."""
        return np.bincount(self.y, minlength=self.num_classes)

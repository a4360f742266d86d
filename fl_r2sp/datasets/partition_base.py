"""The :class:`Partition` result type and the argument checks shared by partitioners."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Partition:
    """Which training rows each client holds.

    Attributes
    ----------
    indices : tuple of np.ndarray
        ``indices[i]`` are client ``i``'s row indices (sorted int64); no row
        appears twice across clients.
    outlier_ids : frozenset of int
        Ground-truth outlier clients (empty unless ``method`` is ``"paper"`` or
        ``"paper-strict"``).
    method : str
        Partitioner name (``"paper"``, ``"paper-strict"``, ``"dirichlet"``, ``"iid"``,
        ``"speaker"``).
    stats : Mapping[str, float], default {}
        Method-specific figures, e.g. pool-exhaustion counts of ``"paper"``.
    proportions : np.ndarray or None, default None
        Target class proportions ``(clients, classes)`` where the method draws
        them per client (``"paper"``, ``"paper-strict"``).
    """

    indices: tuple[np.ndarray, ...]
    outlier_ids: frozenset[int]
    method: str
    stats: Mapping[str, float] = field(default_factory=dict)
    proportions: np.ndarray | None = None

    @property
    def num_clients(self) -> int:
        """Number of clients."""
        return len(self.indices)

    def sizes(self) -> np.ndarray:
        """Number of rows per client."""
        return np.array([len(ix) for ix in self.indices], dtype=np.int64)

    def label_histograms(self, labels: np.ndarray, num_classes: int) -> np.ndarray:
        """Per-client label counts, shape ``(clients, num_classes)``, int64."""
        labels = np.asarray(labels)
        return np.stack(
            [np.bincount(labels[ix], minlength=num_classes) for ix in self.indices]
        ).astype(np.int64)

    def class_shares(self, labels: np.ndarray, num_classes: int) -> np.ndarray:
        """Realised ``(top share, smallest share)`` per client, shape ``(clients, 2)``.

        Shares of the client's own rows (an empty client gets ``(0, 0)``).
        """
        hist = self.label_histograms(labels, num_classes).astype(np.float64)
        total = np.maximum(hist.sum(axis=1, keepdims=True), 1.0)
        shares = hist / total
        return np.column_stack([shares.max(axis=1), shares.min(axis=1)])


def as_labels(labels: np.ndarray) -> np.ndarray:
    """Labels as a 1-D int64 array of non-negative class ids."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {arr.shape}")
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0):
        raise ValueError("labels must be non-negative integers (class ids)")
    return arr.astype(np.int64)


def check_clients(num_clients: int, num_samples: int) -> None:
    """Reject ``num_clients < 1`` or more clients than samples."""
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    if num_clients > num_samples:
        raise ValueError(
            f"{num_clients} clients but only {num_samples} samples; use at most "
            f"{num_samples} clients (num-partitions) or more data (max-train-samples=0)"
        )


def check_alpha(name: str, value: float) -> None:
    """Reject a non-positive (or non-finite) Dirichlet concentration."""
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value}; try e.g. 0.1 or 10")


def check_fraction(value: float) -> None:
    """Reject an outlier fraction outside ``[0, 1)``."""
    if not (0.0 <= value < 1.0):
        raise ValueError(
            f"outlier_fraction must be in [0, 1), got {value}; e.g. 0.25 for a quarter"
        )

"""Robust reducers for the intra-group aggregate: median, trimmed mean, (Multi-)Krum.

These are the rules of Flower's ``FedMedian``, ``FedTrimmedAvg``, ``Krum`` and
``MultiKrum`` (``flwr.serverapp.strategy``; ``flwr.server.strategy.aggregate``),
written again here in NumPy on flat vectors. Why not call Flower's functions:
the policies import no ``flwr`` (``docs/architecture.md`` §1), and the
in-process runner, which the tests and experiments use, may not import the
Flower adapters either, so a callable from ``fl_r2sp.fl.flower`` could not reach
every run. Instead, ``tests/fl/policies/test_robust_aggregation.py`` holds each reducer
equal to Flower's function on random inputs (exactly for the median and the
Krum selection, within float32 rounding for the means, whose summation order
differs).

Differences from Flower, all for determinism (``docs/architecture.md`` §8):
the trimmed mean sorts each coordinate (the kept values do not depend on the
order of the inputs) and sums in float64; Krum computes squared distances of
the differences with ``einsum`` (no BLAS thread dependence; Flower's newer
``compute_distances`` uses ``|x|² + |y|² - 2x·y``, which loses precision on
close vectors). MultiKrum averages the selected updates weighted by
``num_examples``, as Flower's ``MultiKrum`` does (the admission step has
bounded each count by the client's partition size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from fl_r2sp.fl.policies._records import keyed, require

RobustKind = Literal["median", "trimmed-mean", "krum"]
ROBUST_KINDS: tuple[str, ...] = get_args(RobustKind)


@dataclass(frozen=True)
class RobustParams:
    """Knobs of the robust reducers (the group's ``aggregation`` picks one).

    Attributes
    ----------
    trim_beta : float, default 0.2
        ``trimmed-mean``: share in [0, 0.5) cut from each tail of every
        coordinate, ``int(beta * n)`` values per tail (Flower's
        ``FedTrimmedAvg`` default).
    krum_malicious : int, default 0
        ``krum``: f >= 0, the number of malicious clients assumed among the
        collected ones; a client's score sums its ``max(1, n - f - 2)``
        smallest squared distances (Flower's ``Krum`` default f = 0).
    krum_select : int, default 1
        ``krum``: m >= 1 lowest-scoring updates averaged (1 = Krum, more =
        MultiKrum); capped at the number collected.
    """

    trim_beta: float = keyed(0.2, "trim-beta")
    krum_malicious: int = keyed(0, "krum-malicious")
    krum_select: int = keyed(1, "krum-select")

    def __post_init__(self) -> None:
        require(self, "trim_beta", 0.0 <= self.trim_beta < 0.5, "must lie in [0, 0.5)")
        require(self, "krum_malicious", self.krum_malicious >= 0, "must be >= 0")
        require(self, "krum_select", self.krum_select >= 1, "must be >= 1")


def _stack(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """``(n, d)`` float32 stack of equal flat vectors; raises on none or a shape mismatch."""
    if not vectors:
        raise ValueError("cannot aggregate an empty list of vectors")
    shape = np.shape(vectors[0])
    for v in vectors:
        if np.shape(v) != shape or len(shape) != 1:
            raise ValueError(f"robust reducers need equal flat vectors; got {np.shape(v)}, {shape}")
    return np.stack([np.asarray(v, dtype=np.float32) for v in vectors])


def coordinate_median(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Coordinate-wise median (float32), as Flower's ``FedMedian``.

    With an even count it is the mean of the two middle values (NumPy's
    ``median`` in float32, Flower's arithmetic).
    """
    return np.asarray(np.median(_stack(vectors), axis=0), dtype=np.float32)


def trimmed_mean(vectors: Sequence[np.ndarray], beta: float) -> np.ndarray:
    """Coordinate-wise mean after cutting ``int(beta * n)`` values from each tail (float32).

    Raises
    ------
    ValueError
        If ``beta`` lies outside [0, 0.5).
    """
    if not 0.0 <= beta < 0.5:
        raise ValueError(f"trim beta must lie in [0, 0.5), got {beta}")
    ordered = np.sort(_stack(vectors), axis=0)
    n = ordered.shape[0]
    cut = int(beta * n)
    kept = ordered[cut : n - cut].astype(np.float64)
    acc = np.zeros(ordered.shape[1], dtype=np.float64)
    for row in kept:  # one after the other in float64 (docs/architecture.md §8)
        acc += row
    count = int(kept.shape[0])  # an ndarray's shape entries are typed Any
    return (acc / count).astype(np.float32)


def squared_distances(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """``(n, n)`` float64 matrix of squared Euclidean distances between the vectors."""
    x = _stack(vectors).astype(np.float64)
    n = x.shape[0]
    out = np.zeros((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(i + 1, n):
            diff = x[i] - x[j]
            out[i, j] = out[j, i] = float(np.einsum("i,i->", diff, diff))
    return out


def krum_scores(vectors: Sequence[np.ndarray], num_malicious: int) -> np.ndarray:
    """Krum score of each vector: the sum of its ``max(1, n - f - 2)`` smallest distances.

    The distance to itself (0, the first after sorting) is left out, as in Flower.
    """
    dist = squared_distances(vectors)
    closest = max(1, dist.shape[0] - int(num_malicious) - 2)
    return np.array([np.sort(row)[1 : closest + 1].sum() for row in dist], dtype=np.float64)


def krum_select(vectors: Sequence[np.ndarray], num_malicious: int, num_select: int) -> list[int]:
    """Indices of the ``num_select`` lowest Krum scores, lowest first (ties: lower index).

    Raises
    ------
    ValueError
        If ``num_malicious`` < 0 or ``num_select`` < 1.
    """
    if num_malicious < 0 or num_select < 1:
        raise ValueError(f"krum needs f >= 0 and m >= 1, got f={num_malicious}, m={num_select}")
    scores = krum_scores(vectors, num_malicious)
    order = np.argsort(scores, kind="stable")
    return [int(i) for i in order[: min(num_select, len(order))]]

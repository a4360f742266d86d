"""Aggregation of flat weight vectors: means, weighted means and mixing.

All arithmetic runs in float64 and the result is cast back to float32 once,
so the only rounding that depends on the number of contributions is the
float64 one. Contributions are summed one after the other **in the order the
caller passes them**; callers pass them sorted by (arrival time, client id),
which makes every aggregate bit-identical across runs whatever the real
arrival order of the messages was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from fl_r2sp.fl.policies.base import Update
from fl_r2sp.fl.policies.robust import (
    ROBUST_KINDS,
    RobustParams,
    coordinate_median,
    krum_select,
    trimmed_mean,
)

#: The intra-group aggregate: unweighted mean (the paper), weighted by examples (FedAvg), or a
#: robust reducer of :mod:`fl_r2sp.fl.policies.robust` (Flower's FedMedian, FedTrimmedAvg, Krum).
AggregationKind = Literal["mean", "weighted", "median", "trimmed-mean", "krum"]


def _as64(vector: np.ndarray) -> np.ndarray:
    return np.asarray(vector, dtype=np.float64)


def weighted_sum(vectors: Sequence[np.ndarray], coefficients: Sequence[float]) -> np.ndarray:
    """Return ``sum_i coefficients[i] * vectors[i]`` as a float64 vector.

    Parameters
    ----------
    vectors : sequence of np.ndarray
        Equal-length flat vectors, summed in the given order.
    coefficients : sequence of float
        One coefficient per vector.

    Raises
    ------
    ValueError
        If there are no vectors, the counts differ or the shapes differ.
    """
    if not vectors:
        raise ValueError("cannot aggregate an empty list of vectors")
    if len(vectors) != len(coefficients):
        raise ValueError(
            f"got {len(vectors)} vectors but {len(coefficients)} coefficients; pass one each"
        )
    shape = np.shape(vectors[0])
    acc = np.zeros(shape, dtype=np.float64)
    for vector, coef in zip(vectors, coefficients, strict=True):
        if np.shape(vector) != shape:
            raise ValueError(
                f"vector of shape {np.shape(vector)} cannot be summed with shape {shape}"
            )
        acc += float(coef) * _as64(vector)
    return acc


def model_dtype(vectors: Sequence[np.ndarray]) -> type[np.floating]:
    """The result's dtype: float64 when the first vector is float64 (a float64 model
    aggregates without a float32 round trip), else float32 (every model of the project)."""
    first = np.asarray(vectors[0]) if len(vectors) else np.zeros(0, np.float32)
    return np.float64 if first.dtype == np.float64 else np.float32


def mean(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Unweighted mean of ``vectors`` (the model's dtype), summed in the given order."""
    acc = weighted_sum(vectors, [1.0] * len(vectors))
    return (acc / len(vectors)).astype(model_dtype(vectors))


def weighted_mean(vectors: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """Mean of ``vectors`` weighted by ``weights`` (e.g. sample counts), the model's dtype.

    Raises
    ------
    ValueError
        If a weight is negative or all weights are zero.
    """
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be >= 0, got {list(weights)}")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError(
            "sample-weighted mean needs at least one positive num_examples; "
            "use aggregation='mean' or report num_examples from the clients"
        )
    acc = weighted_sum(vectors, weights)
    return (acc / total).astype(model_dtype(vectors))


def coefficients(updates: Sequence[Update], how: AggregationKind) -> list[float]:
    """Per-update coefficients: ``num_examples`` (``weighted``), else 1 each.

    The robust reducers have no linear coefficients; the cosine filter's
    leave-one-out reference then uses the unweighted mean of the others.
    """
    if how == "weighted":
        return [float(u.num_examples) for u in updates]
    if how == "mean" or how in ROBUST_KINDS:
        return [1.0] * len(updates)
    raise ValueError(f"aggregation={how!r} is not one of {', '.join(get_args(AggregationKind))}")


def aggregate(
    updates: Sequence[Update], how: AggregationKind = "mean", robust: RobustParams | None = None
) -> np.ndarray:
    """Aggregate the full weights of ``updates`` (in the given order).

    Parameters
    ----------
    updates : sequence of Update
        Contributions, sorted by the caller by (arrival time, cid).
    how : {"mean", "weighted", "median", "trimmed-mean", "krum"}, default "mean"
        ``"mean"``: unweighted mean (the paper's Algorithm 2, line 8);
        ``"weighted"``: weighted by ``num_examples`` (FedAvg); ``"median"``,
        ``"trimmed-mean"``, ``"krum"``: the robust reducers of
        :mod:`fl_r2sp.fl.policies.robust`.
    robust : RobustParams or None, default None (= ``RobustParams()``)
        Trim share and Krum's f and m.
    """
    coefs = coefficients(updates, how)
    vectors = [u.weights for u in updates]
    knobs = robust if robust is not None else RobustParams()
    if how == "mean":
        return mean(vectors)
    if how == "median":
        return coordinate_median(vectors)
    if how == "trimmed-mean":
        return trimmed_mean(vectors, knobs.trim_beta)
    if how == "krum":
        picked = krum_select(vectors, knobs.krum_malicious, knobs.krum_select)
        if len(picked) == 1:
            return np.asarray(vectors[picked[0]], dtype=model_dtype(vectors)).copy()
        picked.sort()  # sum in collection order (determinism), whatever the score order
        return weighted_mean([vectors[i] for i in picked], [coefs_of(updates, i) for i in picked])
    return weighted_mean(vectors, coefs)


def coefs_of(updates: Sequence[Update], index: int) -> float:
    """``num_examples`` of ``updates[index]`` as a float (MultiKrum's weights, as Flower's)."""
    return float(updates[index].num_examples)


def mix(weights: np.ndarray, other: np.ndarray, weight: float) -> np.ndarray:
    """Return ``(1 - weight) * weights + weight * other`` in ``weights``' dtype (float32/64).

    FL-R²SP's global update is ``mix(w, group_mean, 1 / M)``, ASP's default is
    ``mix(w, w_i, 1 / N')`` and FedAsync's is ``mix(w, w_i, alpha_t)``.

    Raises
    ------
    ValueError
        If ``weight`` lies outside [0, 1] or the shapes differ.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"mixing weight must lie in [0, 1], got {weight}")
    if np.shape(weights) != np.shape(other):
        raise ValueError(f"cannot mix shapes {np.shape(weights)} and {np.shape(other)}")
    out = (1.0 - weight) * _as64(weights) + weight * _as64(other)
    return out.astype(model_dtype([weights]))

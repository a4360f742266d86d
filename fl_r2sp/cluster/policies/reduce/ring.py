"""Ring all-reduce: its time (the selective-reduce paper's Eq. 2), weights, and a NumPy ring.

A ring all-reduce of m members moves the model in 2(m − 1) steps (reduce-scatter, then
all-gather); in each step every member sends one chunk of v/m to its ring successor, so a step
takes α + (v/m) / min b over the ring and the whole collective::

    T(m) = 2(m − 1)·α + 2·(m − 1)/m · v / min b                    (exact, Eq. 2 first line)
    T(m) ≈ 2m·α + 2v / min b                                        (the paper's approximation)

A group of one member has nothing to exchange: T(1) = 0 in both forms. The approximation is the
one the paper's motivating example (Fig. 3) computes with; the simulator uses the exact form.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def ring_time(
    members: int, model_bytes: float, min_bandwidth: float, alpha: float, approx: bool = False
) -> float:
    """Seconds a ring all-reduce of ``members`` workers takes (see the module docstring).

    Parameters
    ----------
    members : int
        Group size m >= 1.
    model_bytes : float
        Model size v in bytes (>= 0).
    min_bandwidth : float
        Bottleneck bandwidth min b of the group in bytes/s (> 0).
    alpha : float
        Per-step latency α in seconds (>= 0).
    approx : bool, default False
        Use the paper's approximation 2mα + 2v/min b instead of the exact form.

    Raises
    ------
    ValueError
        On m < 1, a negative size or latency, or a non-positive bandwidth.
    """
    if members < 1:
        raise ValueError(f"a ring needs >= 1 member, got {members}")
    if not (model_bytes >= 0 and alpha >= 0):
        raise ValueError(f"model_bytes and alpha must be >= 0, got {model_bytes!r}, {alpha!r}")
    if not min_bandwidth > 0:
        raise ValueError(f"min_bandwidth must be > 0 bytes/s, got {min_bandwidth!r}")
    if members == 1:
        return 0.0
    if approx:
        return 2 * members * alpha + 2 * model_bytes / min_bandwidth
    return 2 * (members - 1) * alpha + 2 * (members - 1) / members * model_bytes / min_bandwidth


def member_weights(iterations: Sequence[int], rule: str = "iterations") -> tuple[float, ...]:
    """Weights of a weighted all-reduce's members, summing to 1.

    Parameters
    ----------
    iterations : sequence of int
        Each member's iteration count including the round it just computed (>= 1).
    rule : str, default "iterations"
        "iterations": proportional to the iteration count, so a member that lags behind (a stale
        model) counts less; "uniform": 1/m each.

    Raises
    ------
    ValueError
        On an empty group, a count < 1 or an unknown rule.
    """
    if not iterations:
        raise ValueError("a weighted all-reduce needs at least one member")
    if rule == "uniform":
        return tuple(1.0 / len(iterations) for _ in iterations)
    if rule != "iterations":
        raise ValueError(f"unknown weight rule {rule!r}; choose 'iterations' or 'uniform'")
    if min(iterations) < 1:
        raise ValueError(f"iteration counts must be >= 1, got {list(iterations)}")
    total = float(sum(iterations))
    return tuple(k / total for k in iterations)


def weighted_ring_allreduce(
    models: Sequence[NDArray[np.float64]], weights: Sequence[float]
) -> list[NDArray[np.float64]]:
    """Run a weighted ring all-reduce over flat vectors; return every member's result.

    Each member scales its vector by its normalised weight, then the ring reduce-scatters
    (m − 1 steps: member i adds the chunk it receives from i − 1) and all-gathers (m − 1 steps),
    exactly the data movement :func:`ring_time` times. Every member ends with
    ``sum_i w_i x_i / sum_i w_i``.

    Raises
    ------
    ValueError
        On no member, a length mismatch, vectors of different shapes or non-positive weights.
    """
    m = len(models)
    if m == 0 or len(weights) != m:
        raise ValueError(f"need one weight per model, got {m} models and {len(weights)} weights")
    if any(not w > 0 for w in weights):
        raise ValueError(f"weights must be > 0, got {list(weights)}")
    shape = np.shape(models[0])
    if any(np.shape(x) != shape for x in models):
        raise ValueError("all members' vectors must have the same shape")
    total = float(sum(weights))
    pairs = zip(models, weights, strict=True)
    bufs = [np.asarray(x, dtype=np.float64).ravel() * (w / total) for x, w in pairs]
    bounds = np.linspace(0, bufs[0].size, m + 1).astype(int)
    chunk = [slice(int(bounds[c]), int(bounds[c + 1])) for c in range(m)]
    for step in range(m - 1):  # reduce-scatter: after it, member i owns chunk (i + 1) % m
        sent = [bufs[i][chunk[(i - step) % m]].copy() for i in range(m)]
        for i in range(m):
            bufs[(i + 1) % m][chunk[(i - step) % m]] += sent[i]
    for step in range(m - 1):  # all-gather: pass the finished chunks around the ring
        sent = [bufs[i][chunk[(i + 1 - step) % m]].copy() for i in range(m)]
        for i in range(m):
            bufs[(i + 1) % m][chunk[(i + 1 - step) % m]] = sent[i]
    return [b.reshape(shape) for b in bufs]

"""The paper's stated class shares, enforced (partitioner ``paper-strict``).

The FL-R²SP paper (§VI-B; ``docs/paper-notes.md`` §2.4) says that with α = 0.1
"a single class [takes] up over 97% of the local dataset" and that with
α = 10 "each of the 10 data classes takes up no less than 7%". Plain
Dirichlet draws over 10 classes rarely do so (about 4.7% of Dirichlet(0.1)
draws have a top share above 0.97, about 12.6% of Dirichlet(10) draws have
every share at or above 0.07), so ``paper-strict`` enforces both in two steps.

1. **Conditioned proportions.** Each client's proportions are redrawn from its
   Dirichlet until they have the property of its role: an outlier's largest
   share is strictly above :data:`OUTLIER_TOP`, a regular client's smallest
   share is at least :data:`REGULAR_MIN`. Accepted draws are Dirichlet
   distributed *conditioned on* the property (rejection sampling). At most
   ``max_redraws`` draws per client; then ``ValueError``.
2. **Reserved counts.** Rounding and a finite label pool could still break
   the property, so each client first *reserves* the samples the property
   needs: an outlier ``floor(0.97 * size) + 1`` of its largest class, a regular
   client ``ceil(0.07 * size)`` of every class. If some class cannot hold
   the reserves of all clients, every proportion is redrawn (at most
   ``max_partition_redraws`` times; then ``ValueError``): the partition is then
   also conditioned on fitting the pool, which on CIFAR-10's full split (5,000
   images per class, 390 per client) means at most 6 outliers share a largest
   class. The rest of each client, ``size - reserves``, follows the client's
   own rounded target ``largest_remainder(p, size)`` minus what it reserved,
   drawn from what the reserves left, client by client in id order with the
   redistribution rule of :mod:`fl_r2sp.datasets.redistribution` (a class
   that runs out is replaced proportionally to the client's other wants).

So the realised shares always have the property, while the flexible part of
late clients may differ from their drawn proportions when a class runs out
(the stats count those samples as ``redistributed_samples``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .redistribution import fill_counts
from .split import largest_remainder

#: An outlier's largest class share must be strictly above this (paper: "over 97%").
OUTLIER_TOP = Fraction(97, 100)
#: Every class share of a regular client must be at least this (paper: "no less than 7%").
REGULAR_MIN = Fraction(7, 100)
#: Default bound on the draws of one client's proportions.
MAX_REDRAWS = 10_000
#: Default bound on the redraws of all proportions when the reserves do not fit the pool.
MAX_PARTITION_REDRAWS = 100


def meets_property(p: np.ndarray, outlier: bool) -> bool:
    """True iff proportions ``p`` have the paper's property for the client's role."""
    if outlier:
        return float(np.max(p)) > float(OUTLIER_TOP)
    return float(np.min(p)) >= float(REGULAR_MIN)


def conditioned_proportions(
    conc: np.ndarray,
    outlier: np.ndarray,
    k: int,
    rng: np.random.Generator,
    max_redraws: int = MAX_REDRAWS,
) -> np.ndarray:
    """Per-client Dirichlet proportions redrawn until :func:`meets_property` holds.

    Parameters
    ----------
    conc : np.ndarray
        Dirichlet concentration per client, shape ``(N,)``.
    outlier : np.ndarray
        Boolean role per client, shape ``(N,)``.
    k : int
        Number of classes.
    rng : np.random.Generator
        Source of every draw (clients in id order).
    max_redraws : int, default MAX_REDRAWS
        Draws allowed per client.

    Raises
    ------
    ValueError
        If no regular client can have every share >= 0.07 (``k >= 15``) or a
        client exhausts ``max_redraws``.
    """
    if not outlier.all() and k * REGULAR_MIN > 1:
        raise ValueError(
            f"paper-strict: with {k} classes no client can hold >= "
            f"{float(REGULAR_MIN):.0%} of every class; use partitioner 'paper'"
        )
    props = np.empty((len(conc), k), dtype=np.float64)
    for i, (a, is_out) in enumerate(zip(conc, outlier, strict=True)):
        for _ in range(max_redraws):
            p = rng.dirichlet(np.full(k, float(a)))
            if meets_property(p, bool(is_out)):
                props[i] = p
                break
        else:
            want = (
                f"largest share > {float(OUTLIER_TOP):.2f}"
                if is_out
                else f"every share >= {float(REGULAR_MIN):.2f}"
            )
            raise ValueError(
                f"paper-strict: no Dirichlet({a:g}) draw in {max_redraws} had {want} "
                f"(client {i}, {'outlier' if is_out else 'regular'}); use an "
                f"{'smaller outlier-alpha' if is_out else 'larger alpha'} or partitioner 'paper'"
            )
    return props


def reserves(props: np.ndarray, outlier: np.ndarray, size: int) -> np.ndarray:
    """Samples each client must hold per class for its property, shape ``(N, K)``.

    Outliers: ``floor(0.97 * size) + 1`` of their largest class (ties: the
    lower class id). Regular clients: ``ceil(0.07 * size)`` of every class.
    Exact rational arithmetic, so ``0.07 * 100`` is 7, not 7.000000000000001.
    """
    out = np.zeros(props.shape, dtype=np.int64)
    top = math.floor(OUTLIER_TOP * size) + 1
    low = math.ceil(REGULAR_MIN * size)
    for i, p in enumerate(props):
        if outlier[i]:
            out[i, int(np.argmax(p))] = min(top, size)
        else:
            out[i, :] = low
    return out


def strict_counts(
    props: np.ndarray, outlier: np.ndarray, size: int, available: np.ndarray
) -> tuple[np.ndarray, int] | None:
    """Class counts ``(N, K)`` holding the reserves, or None if they do not fit.

    Parameters
    ----------
    props : np.ndarray
        Conditioned proportions ``(N, K)``.
    outlier : np.ndarray
        Boolean role per client.
    size : int
        Samples per client.
    available : np.ndarray
        Pool size per class, ``(K,)``.

    Returns
    -------
    (np.ndarray, int) or None
        Counts (each row sums to ``size``, each column stays within
        ``available``) and the number of flexible samples moved to another
        class because their class ran out; None when some class cannot hold
        every client's reserve.
    """
    reserve = reserves(props, outlier, size)
    left = np.asarray(available, dtype=np.int64) - reserve.sum(axis=0)
    if (left < 0).any():
        return None
    counts = reserve.copy()
    moved = 0
    for i, p in enumerate(props):
        extra = size - int(reserve[i].sum())
        if extra == 0:
            continue
        want = np.maximum(largest_remainder(p, size) - reserve[i], 0)
        got, diff = fill_counts(want.astype(np.float64), extra, left)
        counts[i] += got
        left -= got
        moved += diff
    return counts, moved


def strict_class_counts(
    conc: np.ndarray,
    outlier: np.ndarray,
    k: int,
    size: int,
    available: np.ndarray,
    rng: np.random.Generator,
    max_redraws: int = MAX_REDRAWS,
    max_partition_redraws: int = MAX_PARTITION_REDRAWS,
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Conditioned proportions and their class counts (see the module doc).

    Returns
    -------
    (np.ndarray, np.ndarray, dict)
        Proportions ``(N, K)``, counts ``(N, K)`` and stats
        ``partition_redraws`` (whole redraws because the reserves did not fit)
        and ``redistributed_samples``.

    Raises
    ------
    ValueError
        As :func:`conditioned_proportions`, or when no draw in
        ``max_partition_redraws`` lets the pool hold every reserve.
    """
    for attempt in range(max_partition_redraws):
        props = conditioned_proportions(conc, outlier, k, rng, max_redraws)
        result = strict_counts(props, outlier, size, available)
        if result is not None:
            counts, moved = result
            return props, counts, {"partition_redraws": attempt, "redistributed_samples": moved}
    raise ValueError(
        f"paper-strict: in {max_partition_redraws} draws some class never had room for every "
        f"client's reserve ({size} samples per client, class pools {list(map(int, available))});"
        " use fewer samples-per-client, fewer outliers, or partitioner 'paper'"
    )

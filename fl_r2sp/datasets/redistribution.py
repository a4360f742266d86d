"""Class counts that follow a client's proportions within what the class pools hold.

The pool-exhaustion rule of both paper partitions (:mod:`fl_r2sp.datasets.paper`
and :mod:`fl_r2sp.datasets.paper_strict`): a client takes ``size * p`` per
class (largest remainder); a class whose pool is short gives what is left, and
the shortfall is spread over the classes that still have samples,
proportionally to the client's own ``p`` (largest remainder, capped by
availability, repeated until the client is full). If none of the client's
classes have samples left, the shortfall follows the remaining pool sizes.
"""

from __future__ import annotations

import numpy as np

from .split import largest_remainder


def fill_counts(p: np.ndarray, size: int, available: np.ndarray) -> tuple[np.ndarray, int]:
    """Class counts summing to ``size`` following ``p``, never above ``available``.

    Parameters
    ----------
    p : np.ndarray
        The client's class weights ``(K,)`` (need not sum to 1).
    size : int
        Samples the client receives; at most ``available.sum()``.
    available : np.ndarray
        Samples left per class ``(K,)``.

    Returns
    -------
    (np.ndarray, int)
        The counts ``(K,)`` and how many samples had to be redistributed.
    """
    counts = np.minimum(largest_remainder(p, size), available)
    shortfall = moved = size - int(counts.sum())
    while shortfall > 0:
        room = available - counts
        weights = np.where(room > 0, p, 0.0)
        if weights.sum() <= 0:
            # The client's own classes are all used up: follow what is left.
            weights = room.astype(np.float64)
        counts += np.minimum(largest_remainder(weights, shortfall), room)
        # Each pass either fills the client or closes at least one class, so
        # the loop runs at most K times.
        shortfall = size - int(counts.sum())
    return counts, moved

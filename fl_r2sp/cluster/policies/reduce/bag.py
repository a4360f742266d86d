"""BAG, bandwidth-aware grouping (Algorithm 1 of the selective-reduce paper).

Sort the ready workers by bandwidth, highest first; fill a group with the first p of them and
set the threshold b* = (1 − η) · the bandwidth of the last of those p; extend the group with
every following worker whose bandwidth is >= b*; the first one below b* opens the next group.
The last group may have fewer than p members (the caller holds it).

Two readings (``docs/paper-notes.md`` §5.4):

* ``strict=True`` (consistent): a group takes its base members while ``len(g) < p``; this is
  the only reading that reproduces the paper's Fig. 3 (p = 2, η = 0.3, bandwidths {1, 5, 1, 5}
  give [[w2, w4], [w1, w3]]). ``strict=False`` is the printed ``len(g) <= p``: base groups of
  p + 1, threshold from the (p + 1)-th member (Fig. 3 becomes one group of four).
* ``reset_threshold=True`` (consistent): a new group resets b* from its first member. The
  printed algorithm keeps the previous group's b* (harmless for p >= 2 with ``strict``, since
  the next base member resets it; with p = 1 the stale b* blocks every extension).

Ties in bandwidth go in key order, real workers (keys >= 0) before virtual ones (keys < 0, used
by BPAWR for predicted arrivals), so a tie never displaces a worker that is already ready.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def bag(
    keys: Sequence[int],
    bandwidths: Sequence[float],
    p: int,
    eta: float,
    strict: bool = True,
    reset_threshold: bool = True,
) -> list[list[int]]:
    """Split ``keys`` into bandwidth-aware groups (see the module docstring).

    Parameters
    ----------
    keys : sequence of int
        Worker ids (>= 0) and virtual workers (< 0); unique.
    bandwidths : sequence of float
        Bandwidth of each key (same order, any unit, > 0).
    p : int
        Minimum group size (>= 1).
    eta : float
        Tolerance η in [0, 1).
    strict : bool, default True
        ``len(g) < p`` (True, consistent) or the printed ``len(g) <= p`` (False).
    reset_threshold : bool, default True
        Reset b* when a group opens (True, consistent) or keep the old one (False, printed).

    Returns
    -------
    list of list of int
        Groups in order of falling bandwidth; each group's keys in bandwidth order.

    Raises
    ------
    ValueError
        On mismatched lengths, duplicate keys, p < 1 or η outside [0, 1).
    """
    if len(keys) != len(bandwidths):
        raise ValueError(f"{len(keys)} keys but {len(bandwidths)} bandwidths")
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if not 0.0 <= eta < 1.0:
        raise ValueError(f"eta must lie in [0, 1), got {eta!r}")
    key_arr = np.asarray(keys, dtype=np.int64)
    bw_arr = np.asarray(bandwidths, dtype=np.float64)
    if len(set(key_arr.tolist())) != key_arr.size:
        raise ValueError(f"duplicate keys in {list(keys)}")
    # lexsort: last key first -> falling bandwidth, then real before virtual, then |key|
    order = np.lexsort((np.abs(key_arr), key_arr < 0, -bw_arr))
    base = p if strict else p + 1
    return _cut(key_arr[order], bw_arr[order], base, 1.0 - eta, reset_threshold)


def _cut(
    keys: NDArray[np.int64], bws: NDArray[np.float64], base: int, keep: float, reset: bool
) -> list[list[int]]:
    """Cut the sorted workers into groups (the loop of Algorithm 1, by binary search).

    Bandwidths fall along ``bws``, so a group's extension ends at the first worker below its
    threshold: a group starting at ``i`` takes its base members ``i .. j-1`` (j = i + base),
    then every following worker down to that threshold.
    """
    n = int(keys.size)
    rising = -bws  # ascending, for searchsorted
    groups: list[list[int]] = []
    i, threshold = 0, 0.0
    while i < n:
        j = min(i + base, n)
        if base > 1 or reset or not groups:
            threshold = float(bws[j - 1]) * keep
        # else: the printed algorithm keeps the previous group's threshold (only base 1 sees it)
        end = max(j, int(np.searchsorted(rising, -threshold, side="right")))
        groups.append(keys[i:end].tolist())
        i = end
    return groups

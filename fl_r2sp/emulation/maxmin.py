"""Max-min fair rate allocation (water-filling / progressive filling).

A *flow* crosses a set of links; each link has a capacity in bytes/s. The
max-min fair allocation gives every flow the largest rate such that no flow's
rate can grow without shrinking a flow whose rate is not larger. It is found by
repeatedly taking the link with the smallest fair share (remaining capacity /
number of unfrozen flows on it), freezing its flows at that share and
subtracting their rates from every link they cross (Bertsekas & Gallager,
*Data Networks*, 6.5.2). :func:`waterfill` freezes, in the same pass, every
flow limited by a private link (one used by that flow alone) below that
share, which keeps the pass count small on star topologies.

:func:`waterfill` is the vectorised kernel used by the network model on every
flow-set change; :func:`maxmin_rates` is its validated public wrapper and
:func:`maxmin_rates_reference` a slow pure-Python solver for property tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Relative slack when deciding which links share the minimum fair share; it
#: only groups links whose shares differ by rounding, so it cannot change a result
#: by more than this relative amount.
SHARE_RTOL = 1e-12

#: Index of the padding "link" in a link matrix: infinite capacity, never a bottleneck.
PAD = 0


def waterfill(link_mat: np.ndarray, cap_ext: np.ndarray) -> np.ndarray:
    """Max-min rates for flows given as a padded link-index matrix.

    Parameters
    ----------
    link_mat : numpy.ndarray of int, shape (n_flows, width)
        Row ``f`` lists the link indices flow ``f`` crosses, padded with
        :data:`PAD` (index 0).
    cap_ext : numpy.ndarray of float, shape (n_links + 1,)
        Capacities with ``cap_ext[PAD] == inf``; real links start at index 1.

    Returns
    -------
    numpy.ndarray of float, shape (n_flows,)
        Each flow's rate. Inputs are assumed valid (see :func:`maxmin_rates`).
    """
    n = link_mat.shape[0]
    rates = np.zeros(n)
    if n == 0:
        return rates
    n_links = cap_ext.shape[0]
    remaining = cap_ext.astype(float, copy=True)
    open_rows = np.arange(n)
    sub = link_mat
    width = link_mat.shape[1]
    while True:
        counts = np.bincount(sub.ravel(), minlength=n_links)
        counts[PAD] = 0
        # Links without open flows get an infinite share (no errstate: it is slow).
        shares = remaining / np.maximum(counts, 1)
        shares[counts == 0] = np.inf
        own = shares[sub].min(axis=1)  # each open flow's tightest link share
        shared = shares[counts >= 2]
        bar = shared.min() if shared.size else np.inf
        # Flows whose tightest share is below every shared link's share are
        # limited by a private link (used by them alone): final at that capacity.
        # Freeze them all in one pass (freezing a flow below a link's share only
        # raises that share); only when there are none, freeze the flows at the
        # smallest shared share, as in the textbook algorithm. A star with 1,000
        # distinct client caps thus takes a few passes, not 1,000.
        hit = own < bar * (1.0 - SHARE_RTOL)
        if not hit.any():
            hit = own <= bar * (1.0 + SHARE_RTOL)
        level = np.minimum(own[hit], bar)
        if hit.all():
            rates[open_rows] = level
            return rates
        rates[open_rows[hit]] = level
        used = np.bincount(sub[hit].ravel(), weights=np.repeat(level, width), minlength=n_links)
        used[PAD] = 0.0
        remaining = np.maximum(remaining - used, 0.0)
        open_rows = open_rows[~hit]
        sub = sub[~hit]
    return rates


def link_matrix(flow_links: Sequence[Sequence[int]], offset: int = 1) -> np.ndarray:
    """Pack variable-length link lists into a :data:`PAD`-padded matrix (indices + offset)."""
    width = max((len(links) for links in flow_links), default=1)
    mat = np.full((len(flow_links), max(width, 1)), PAD, dtype=np.int64)
    for row, links in enumerate(flow_links):
        mat[row, : len(links)] = np.asarray(links, dtype=np.int64) + offset
    return mat


def _validate(flow_links: Sequence[Sequence[int]], capacities: np.ndarray) -> None:
    if capacities.ndim != 1:
        raise ValueError(f"capacities must be a 1-D array, got shape {capacities.shape}")
    bad = ~(capacities > 0)
    if bad.any():
        raise ValueError(
            f"link capacities must be positive (bytes/s), got {capacities[bad][:3].tolist()} "
            f"at links {np.flatnonzero(bad)[:3].tolist()}"
        )
    for f, links in enumerate(flow_links):
        if len(links) == 0:
            raise ValueError(f"flow {f} crosses no link; every flow needs at least one")
        if len(set(int(x) for x in links)) != len(links):
            raise ValueError(f"flow {f} lists a link twice ({list(links)}); list each link once")
        for link in links:
            if not 0 <= int(link) < capacities.shape[0]:
                raise ValueError(
                    f"flow {f} uses link {link}, but only links 0..{capacities.shape[0] - 1} exist"
                )


def maxmin_rates(flow_links: Sequence[Sequence[int]], capacities: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows over capacitated links.

    Parameters
    ----------
    flow_links : sequence of sequences of int
        ``flow_links[f]`` are the (0-based) links flow ``f`` crosses; at least one each.
    capacities : numpy.ndarray of float, shape (n_links,)
        Positive link capacities (``inf`` allowed for an uncapacitated link).

    Returns
    -------
    numpy.ndarray of float, shape (n_flows,)

    Raises
    ------
    ValueError
        On non-positive or NaN capacities, a flow with no link or an unknown link index.
    """
    cap = np.asarray(capacities, dtype=float)
    _validate(flow_links, cap)
    cap_ext = np.concatenate(([np.inf], cap))
    return waterfill(link_matrix(flow_links), cap_ext)


def maxmin_rates_reference(
    flow_links: Sequence[Sequence[int]], capacities: Sequence[float]
) -> list[float]:
    """Slow, obviously-correct max-min solver (pure Python; one bottleneck link per step)."""
    remaining = [float(c) for c in capacities]
    rates = [0.0] * len(flow_links)
    open_flows = set(range(len(flow_links)))
    while open_flows:
        best_link, best_share = -1, math.inf
        for link, cap in enumerate(remaining):
            users = [f for f in open_flows if link in flow_links[f]]
            if users and cap / len(users) < best_share:
                best_link, best_share = link, cap / len(users)
        for f in [f for f in open_flows if best_link in flow_links[f]]:
            rates[f] = best_share
            open_flows.discard(f)
            for link in set(flow_links[f]):
                remaining[link] = max(remaining[link] - best_share, 0.0)
    return rates

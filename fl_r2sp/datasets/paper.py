"""The FL-R²SP paper's partition (§VI-B): Dirichlet class mixes with outlier clients.

The paper's setting, and what it leaves open: ``docs/paper-notes.md`` §2.4.

Each client ``i`` draws class proportions ``p_i ~ Dirichlet(a_i * 1_K)`` with
``a_i = outlier_alpha`` for outliers and ``alpha`` otherwise, and receives
``size`` samples whose class counts are ``size * p_i`` rounded by largest
remainder, drawn WITHOUT replacement from per-class pools that were shuffled
once with the seed. Clients are served in id order.

Pool exhaustion: when a client wants more samples of class ``c`` than the
pool has left, it takes what is left and the shortfall is redistributed over
the classes that still have samples (:mod:`fl_r2sp.datasets.redistribution`). Because
``num_clients * size <= len(labels)`` is checked first, every client is
always filled. ``Partition.stats`` reports how often this happened.

``strict=True`` (partitioner ``paper-strict``) conditions the draws on the
class shares the paper states and reserves the samples they need before
filling the rest: :mod:`fl_r2sp.datasets.paper_strict`.
"""

from __future__ import annotations

import numpy as np

from .paper_strict import strict_class_counts
from .partition_base import Partition, as_labels, check_alpha, check_clients, check_fraction
from .redistribution import fill_counts
from .split import round_half_up


def paper_partition(
    labels: np.ndarray,
    num_clients: int,
    alpha: float = 10.0,
    outlier_alpha: float = 0.1,
    outlier_fraction: float = 0.25,
    samples_per_client: int = 0,
    seed: int = 0,
    num_classes: int | None = None,
    strict: bool = False,
) -> Partition:
    """Partition ``labels`` the paper's way (see module doc).

    Parameters
    ----------
    labels : np.ndarray
        Class id per training sample.
    num_clients : int
        N, number of clients.
    alpha : float, default 10.0
        Dirichlet concentration of regular clients (mixed classes).
    outlier_alpha : float, default 0.1
        Dirichlet concentration of outliers (one or two dominant classes).
    outlier_fraction : float, default 0.25
        Fraction of outliers in ``[0, 1)``; their number is
        ``round_half_up(outlier_fraction * num_clients)`` (``0.25 * 10 -> 3``).
    samples_per_client : int, default 0
        Samples per client; 0 means ``len(labels) // num_clients``.
    seed : int, default 0
        Seeds outlier choice, proportions and pool order (same seed, same result).
    num_classes : int or None, default None
        K; ``None`` means ``max(labels) + 1``.
    strict : bool, default False
        Enforce the paper's stated shares (outliers: one class over 97%; regular
        clients: every class at least 7%) with conditioned draws and reserved
        counts (:mod:`fl_r2sp.datasets.paper_strict`); ``method`` is then
        ``"paper-strict"`` and the stats keys are ``samples_per_client``,
        ``partition_redraws``, ``redistributed_samples`` and ``exhausted_classes``.

    Returns
    -------
    Partition
        With ``outlier_ids``, ``proportions`` and ``stats`` keys
        ``samples_per_client``, ``exhausted_clients`` (clients whose draw was
        redistributed), ``redistributed_samples`` and ``exhausted_classes``
        (pools emptied by the end).
    """
    y = as_labels(labels)
    check_clients(num_clients, len(y))
    check_alpha("alpha", alpha)
    check_alpha("outlier_alpha", outlier_alpha)
    check_fraction(outlier_fraction)
    size = samples_per_client if samples_per_client > 0 else len(y) // num_clients
    if samples_per_client < 0 or size * num_clients > len(y):
        raise ValueError(
            f"samples_per_client={samples_per_client} x {num_clients} clients exceeds the "
            f"{len(y)} samples; use at most {len(y) // num_clients} (or 0 for an equal share)"
        )
    k = int(num_classes) if num_classes is not None else int(y.max()) + 1
    rng = np.random.default_rng(seed)
    outliers = np.sort(
        rng.choice(num_clients, round_half_up(outlier_fraction * num_clients), replace=False)
    )
    conc = np.full(num_clients, float(alpha))
    conc[outliers] = outlier_alpha
    if strict:
        return _strict(y, k, size, conc, outliers, rng)
    props = np.stack([rng.dirichlet(np.full(k, c)) for c in conc])
    pools = [rng.permutation(np.flatnonzero(y == c)) for c in range(k)]
    taken = np.zeros(k, dtype=np.int64)
    avail_total = np.array([len(pl) for pl in pools], dtype=np.int64)
    indices, exhausted, moved = [], 0, 0
    for i in range(num_clients):
        counts, diff = fill_counts(props[i], size, avail_total - taken)
        exhausted, moved = exhausted + (diff > 0), moved + diff
        rows = [pools[c][taken[c] : taken[c] + counts[c]] for c in range(k)]
        taken += counts
        indices.append(np.sort(np.concatenate(rows)).astype(np.int64))
    stats = {
        "samples_per_client": size,
        "exhausted_clients": exhausted,
        "redistributed_samples": moved,
        "exhausted_classes": int(np.sum((taken == avail_total) & (avail_total > 0))),
    }
    return Partition(
        indices=tuple(indices),
        outlier_ids=frozenset(int(o) for o in outliers),
        method="paper",
        stats=stats,
        proportions=props,
    )


def _strict(
    y: np.ndarray,
    k: int,
    size: int,
    conc: np.ndarray,
    outliers: np.ndarray,
    rng: np.random.Generator,
) -> Partition:
    """The ``paper-strict`` partition (:mod:`fl_r2sp.datasets.paper_strict`)."""
    role = np.zeros(len(conc), dtype=bool)
    role[outliers] = True
    available = np.bincount(y, minlength=k).astype(np.int64)
    props, counts, stats = strict_class_counts(conc, role, k, size, available, rng)
    pools = [rng.permutation(np.flatnonzero(y == c)) for c in range(k)]
    offsets = np.concatenate([np.zeros((1, k), np.int64), np.cumsum(counts, axis=0)])
    indices = tuple(
        np.sort(
            np.concatenate([pools[c][offsets[i, c] : offsets[i + 1, c]] for c in range(k)])
        ).astype(np.int64)
        for i in range(len(conc))
    )
    emptied = int(np.sum((offsets[-1] == available) & (available > 0)))
    return Partition(
        indices=indices,
        outlier_ids=frozenset(int(o) for o in outliers),
        method="paper-strict",
        proportions=props,
        stats={"samples_per_client": size, **stats, "exhausted_classes": emptied},
    )

"""Federated partitions of a training set: paper (plain or strict), Dirichlet, IID, by speaker.

Every partitioner is a pure function of its arguments: the same seed gives
the same partition, bit for bit. :func:`make_partition` dispatches by name
and validates the arguments before anything is drawn.
"""

from __future__ import annotations

import numpy as np

from .paper import paper_partition
from .partition_base import Partition, as_labels, check_alpha, check_clients, check_fraction

PARTITIONERS = ("paper", "paper-strict", "dirichlet", "iid", "speaker")

__all__ = [
    "PARTITIONERS",
    "Partition",
    "dirichlet_partition",
    "iid_partition",
    "make_partition",
    "paper_partition",
    "speaker_partition",
]


def iid_partition(
    num_samples: int, num_clients: int, seed: int, samples_per_client: int = 0
) -> Partition:
    """Uniformly random, equal-sized shards (sizes differ by at most one).

    Parameters
    ----------
    num_samples : int
        Number of training rows.
    num_clients : int
        Number of clients.
    seed : int
        Seed of the shuffle.
    samples_per_client : int, default 0
        If > 0, each client gets exactly this many rows (the rest are unused);
        0 shares all rows.
    """
    check_clients(num_clients, num_samples)
    if samples_per_client < 0 or samples_per_client * num_clients > num_samples:
        raise ValueError(
            f"samples_per_client={samples_per_client} x {num_clients} clients "
            f"exceeds {num_samples} samples"
        )
    perm = np.random.default_rng(seed).permutation(num_samples)
    if samples_per_client > 0:
        perm = perm[: samples_per_client * num_clients]
    shards = np.array_split(perm, num_clients)
    return Partition(
        indices=tuple(np.sort(s).astype(np.int64) for s in shards),
        outlier_ids=frozenset(),
        method="iid",
    )


def _dirichlet_attempt(
    y: np.ndarray, n: int, alpha: float, rng: np.random.Generator, self_balancing: bool
) -> list[list[np.ndarray]]:
    parts: list[list[np.ndarray]] = [[] for _ in range(n)]
    sizes = np.zeros(n, dtype=np.int64)
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        q = rng.dirichlet(np.full(n, alpha))
        if self_balancing:
            # As flwr-datasets: clients already above the average take no more.
            q = np.where(sizes < len(y) / n, q, 0.0)
            q = q / q.sum() if q.sum() > 0 else np.full(n, 1.0 / n)
        cuts = (np.cumsum(q) * len(rows)).astype(np.int64)[:-1]
        for i, chunk in enumerate(np.split(rows, cuts)):
            parts[i].append(chunk)
            sizes[i] += len(chunk)
    return parts


def dirichlet_partition(
    labels: np.ndarray,
    num_clients: int,
    alpha: float,
    seed: int,
    min_size: int = 10,
    self_balancing: bool = False,
    max_attempts: int = 100,
) -> Partition:
    """Label-skew partition, as flwr-datasets' ``DirichletPartitioner``.

    For each class, proportions over the clients are drawn from
    ``Dirichlet(alpha * 1_N)`` and the class's shuffled rows are cut at the
    cumulative proportions. The draw is repeated (same generator, so still
    deterministic) until every client has ``min_size`` rows.

    Parameters
    ----------
    labels : np.ndarray
        Class id per row.
    num_clients : int
        Number of clients.
    alpha : float
        Concentration; small values give clients few classes.
    seed : int
        Seed of every draw.
    min_size : int, default 10
        Minimum rows per client (flwr-datasets' ``min_partition_size``).
    self_balancing : bool, default False
        Stop giving rows to clients already above the average size.
    max_attempts : int, default 100
        Redraws before giving up with ``ValueError``.
    """
    y = as_labels(labels)
    check_clients(num_clients, len(y))
    check_alpha("alpha", alpha)
    rng = np.random.default_rng(seed)
    for _ in range(max_attempts):
        parts = _dirichlet_attempt(y, num_clients, alpha, rng, self_balancing)
        indices = tuple(np.sort(np.concatenate(p)).astype(np.int64) for p in parts)
        if min(len(ix) for ix in indices) >= min_size:
            return Partition(indices=indices, outlier_ids=frozenset(), method="dirichlet")
    raise ValueError(
        f"no Dirichlet(alpha={alpha}) draw in {max_attempts} attempts gave all "
        f"{num_clients} clients >= {min_size} samples; raise alpha, lower min_size, "
        "or use fewer clients"
    )


def speaker_partition(groups: np.ndarray, num_clients: int, seed: int) -> Partition:
    """Whole speakers per client (KWS), balanced by number of clips.

    Speakers are shuffled with ``seed``, ordered by clip count (largest
    first, shuffled order breaks ties) and each goes to the client with the
    fewest clips so far (lowest id on ties): no speaker is split.
    """
    g = np.asarray(groups)
    speakers, inverse, counts = np.unique(g, return_inverse=True, return_counts=True)
    if num_clients < 1 or num_clients > len(speakers):
        raise ValueError(
            f"speaker partition needs 1 <= num_clients <= {len(speakers)} "
            f"speakers, got {num_clients}; use fewer clients"
        )
    shuffled = np.random.default_rng(seed).permutation(len(speakers))
    order = shuffled[np.argsort(-counts[shuffled], kind="stable")]
    owner = np.empty(len(speakers), dtype=np.int64)
    load = np.zeros(num_clients, dtype=np.int64)
    for s in order:
        i = int(np.argmin(load))
        owner[s] = i
        load[i] += counts[s]
    row_owner = owner[inverse.ravel()]
    return Partition(
        indices=tuple(np.flatnonzero(row_owner == i) for i in range(num_clients)),
        outlier_ids=frozenset(),
        method="speaker",
        stats={"speakers": len(speakers)},
    )


def make_partition(
    method: str,
    labels: np.ndarray,
    groups: np.ndarray | None,
    num_clients: int,
    alpha: float = 10.0,
    outlier_alpha: float = 0.1,
    outlier_fraction: float = 0.25,
    samples_per_client: int = 0,
    seed: int = 0,
    num_classes: int | None = None,
) -> Partition:
    """Dispatch to a partitioner by ``method`` after validating every argument.

    ``alpha``, ``outlier_alpha`` and ``outlier_fraction`` are checked for all
    methods (they come from the run config) though only ``paper`` and
    ``paper-strict`` (all three) and ``dirichlet`` (``alpha``) use them;
    ``samples_per_client`` is used by ``paper``, ``paper-strict`` and ``iid``.
    ``dirichlet`` uses ``min_size = min(10, n // N)``.
    ``speaker`` needs ``groups``.
    """
    if method not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {method!r}; known: {', '.join(PARTITIONERS)}")
    y = as_labels(labels)
    check_clients(num_clients, len(y))
    check_alpha("alpha", alpha)
    check_alpha("outlier_alpha", outlier_alpha)
    check_fraction(outlier_fraction)
    if samples_per_client < 0:
        raise ValueError(f"samples_per_client must be >= 0, got {samples_per_client}")
    if method in ("paper", "paper-strict"):
        return paper_partition(
            y,
            num_clients,
            alpha,
            outlier_alpha,
            outlier_fraction,
            samples_per_client,
            seed,
            num_classes,
            strict=method == "paper-strict",
        )
    if method == "dirichlet":
        return dirichlet_partition(
            y, num_clients, alpha, seed, min_size=min(10, len(y) // num_clients)
        )
    if method == "iid":
        return iid_partition(len(y), num_clients, seed, samples_per_client)
    if groups is None:
        raise ValueError(
            "the speaker partitioner needs per-sample speaker ids; "
            "use dataset 'kws' or 'kws-audio', or another partitioner"
        )
    return speaker_partition(groups, num_clients, seed)

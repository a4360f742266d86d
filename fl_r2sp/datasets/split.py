"""Seeded, fixed train/test splits and stratified subsampling.

The central test splits do not depend on the run's seed: they use the
constants below so that every run of every scheme is scored on the same
examples.
"""

from __future__ import annotations

import math

import numpy as np

#: Seed of the digits 80/20 stratified split.
DIGITS_SPLIT_SEED = 0
#: Fraction of digits samples (per class) held out for the test split.
DIGITS_TEST_FRACTION = 0.2
#: Seed of the KWS speaker split (both ``kws`` and ``kws-audio``).
KWS_SPLIT_SEED = 0
#: Fraction of speakers whose clips form the KWS test split.
KWS_TEST_SPEAKER_FRACTION = 0.1


def round_half_up(x: float) -> int:
    """Round to the nearest integer, halves up (``2.5 -> 3``), unlike ``round``."""
    return int(math.floor(x + 0.5))


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Split row indices so each class keeps ``test_fraction`` of its rows for test.

    Per class ``c`` with ``n_c`` rows, ``round_half_up(test_fraction * n_c)``
    rows chosen by a generator seeded with ``seed`` go to the test side.

    Returns
    -------
    (np.ndarray, np.ndarray)
        Sorted int64 train and test indices.
    """
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        rows = rows[rng.permutation(len(rows))]
        k = round_half_up(test_fraction * len(rows))
        test.append(rows[:k])
        train.append(rows[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def stratified_subsample(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Choose ``n`` row indices keeping class proportions (largest remainder).

    Parameters
    ----------
    y : np.ndarray
        Labels.
    n : int
        Number of rows to keep, ``0 < n <= len(y)``.
    seed : int
        Seed of the choice.

    Returns
    -------
    np.ndarray
        Sorted int64 indices.
    """
    if not 0 < n <= len(y):
        raise ValueError(f"cannot subsample {n} of {len(y)} rows; use 0 < n <= {len(y)}")
    classes, counts = np.unique(y, return_counts=True)
    quota = largest_remainder(counts / counts.sum(), n)
    rng = np.random.default_rng(seed)
    keep = [
        rng.choice(np.flatnonzero(y == c), size=int(q), replace=False)
        for c, q in zip(classes, quota, strict=True)
    ]
    return np.sort(np.concatenate(keep)).astype(np.int64)


def largest_remainder(p: np.ndarray, total: int) -> np.ndarray:
    """Integer counts summing to ``total`` closest to ``total * p``.

    Floors ``total * p`` and hands the leftover units to the largest
    fractional parts (ties to the lower index), so the result is exact and
    deterministic. ``p`` must be non-negative with a positive sum; it is
    normalised first.
    """
    p = np.asarray(p, dtype=np.float64)
    want = total * p / p.sum()
    counts: np.ndarray = np.floor(want).astype(np.int64)
    left = total - int(counts.sum())
    if left > 0:
        order = np.argsort(-(want - counts), kind="stable")
        counts[order[:left]] += 1
    return counts


def speaker_split(speakers: np.ndarray, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of rows whose speaker is in the test split.

    The sorted unique speakers are permuted by a generator seeded with
    ``seed`` and the first ``max(1, round_half_up(test_fraction * S))`` form
    the test split, so no speaker has clips on both sides.
    """
    unique = np.unique(speakers)
    if len(unique) < 2:
        raise ValueError(f"speaker split needs at least 2 speakers, got {len(unique)}")
    rng = np.random.default_rng(seed)
    k = min(len(unique) - 1, max(1, round_half_up(test_fraction * len(unique))))
    test_speakers = unique[rng.permutation(len(unique))[:k]]
    return np.isin(speakers, test_speakers)

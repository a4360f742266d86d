"""Cosine-similarity outlier filter of FL-R²SP (paper §IV-B2).

A client whose update delta points away from the reference delta (by default
its group's aggregate delta) scores a low cosine similarity. Scoring below
``threshold`` (β = 0.5) in ``rounds`` (3) *consecutive scored rounds*
blacklists it: it gets no more training jobs. Any score >= β resets its
streak; rounds in which a client is not scored leave the streak unchanged.
Precision and recall of the blacklist are measured against the partition's
known outlier ids.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fl_r2sp.strategies.params import OutlierParams


def cosine(delta: np.ndarray, reference: np.ndarray) -> float:
    """Cosine similarity of two flat vectors (float64 arithmetic).

    Returns 0.0 when either vector has norm 0: a client that did not move (or
    a group that did not move) carries no evidence either way, and 0 < β keeps
    it from resetting a streak by accident.
    """
    a = np.asarray(delta, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"cosine of shapes {a.shape} and {b.shape}: need equal flat vectors")
    # einsum runs numpy's own loop, not BLAS: BLAS dot results may depend on
    # its thread count, and on a loaded machine its threads cost ~100x more.
    na = math.sqrt(float(np.einsum("i,i->", a, a)))
    nb = math.sqrt(float(np.einsum("i,i->", b, b)))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.einsum("i,i->", a, b)) / (na * nb)


class OutlierFilter:
    """Blacklist clients with ``rounds`` consecutive cosine scores below ``threshold``.

    Parameters
    ----------
    params : OutlierParams, default OutlierParams()
        ``cosine_threshold`` (β: a score strictly below it is a low,
        outlier-like round), ``rounds`` (consecutive low scored rounds that
        blacklist a client) and ``enabled`` (when False, scores are still
        tracked for the logs but nobody is blacklisted) are read.
    known_outliers : frozenset of int, default empty
        Ground-truth outlier ids, only used for :meth:`precision` / :meth:`recall`.
    """

    def __init__(
        self,
        params: OutlierParams | None = None,
        known_outliers: frozenset[int] = frozenset(),
    ) -> None:
        params = params if params is not None else OutlierParams()
        self.threshold = float(params.cosine_threshold)
        self.rounds = int(params.rounds)
        self.known_outliers = frozenset(int(c) for c in known_outliers)
        self.enabled = bool(params.enabled)
        self.blacklisted: set[int] = set()
        #: Time at which each blacklisted client was blacklisted.
        self.blacklist_times: dict[int, float] = {}
        self._streak: dict[int, int] = {}
        self.num_scores = 0

    def streak(self, cid: int) -> int:
        """Current number of consecutive low scores of ``cid``."""
        return self._streak.get(cid, 0)

    def observe(self, cid: int, score: float, now: float) -> bool:
        """Record one scored round of ``cid``; True iff it becomes blacklisted now."""
        if cid in self.blacklisted:
            return False
        self.num_scores += 1
        if score >= self.threshold:
            self._streak[cid] = 0
            return False
        self._streak[cid] = self._streak.get(cid, 0) + 1
        if self.enabled and self._streak[cid] >= self.rounds:
            self.blacklisted.add(cid)
            self.blacklist_times[cid] = float(now)
            return True
        return False

    def precision(self) -> float:
        """Fraction of blacklisted clients that are known outliers (NaN if none)."""
        if not self.blacklisted:
            return math.nan
        return len(self.blacklisted & self.known_outliers) / len(self.blacklisted)

    def recall(self) -> float:
        """Fraction of known outliers that are blacklisted (NaN if none known)."""
        if not self.known_outliers:
            return math.nan
        return len(self.blacklisted & self.known_outliers) / len(self.known_outliers)

    def summary(self) -> dict[str, Any]:
        """JSON-friendly figures (NaN precision/recall become ``None``)."""

        def _num(x: float) -> float | None:
            # A switched-off filter has no precision/recall (not a recall of 0).
            return None if math.isnan(x) or not self.enabled else x

        return {
            "outlier_filter": self.enabled,
            "blacklisted": sorted(self.blacklisted),
            "num_blacklisted": len(self.blacklisted),
            "known_outliers": sorted(self.known_outliers),
            "blacklist_precision": _num(self.precision()),
            "blacklist_recall": _num(self.recall()),
            "num_scores": self.num_scores,
        }

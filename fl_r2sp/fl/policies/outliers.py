"""Cosine-similarity outlier filter of FL-R²SP (paper §IV-B2).

A client whose update delta points away from the reference delta (by default
the global model's change since its group started) scores a low cosine
similarity. A low score in ``rounds`` (3) *consecutive scored rounds*
blacklists it: it gets no more training jobs. Under the paper's rule a score
is low below ``threshold`` (β = 0.5); other rules hand each score its own cut
(:class:`~fl_r2sp.fl.policies.outlier_rules.OutlierRule`). Any score that is not low resets
the streak; rounds in which a client is not scored leave it unchanged.
Precision and recall of the blacklist are measured against the partition's
known outlier ids, which the ``oracle`` rule blacklists from the start.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from fl_r2sp.fl.policies.outlier_rules import OutlierRule, outlier_rule
from fl_r2sp.fl.policies.params import OutlierParams


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
    """Blacklist clients with ``rounds`` consecutive low cosine scores.

    Parameters
    ----------
    params : OutlierParams, default OutlierParams()
        ``cosine_threshold`` (β: by default a score strictly below it is a low,
        outlier-like round), ``rounds`` (consecutive low scored rounds that
        blacklist a client), ``rule`` (whether streaks blacklist, and whom it excludes at
        the start, see :meth:`exclude_known`; ``oracle``: the known outliers, and scores
        never blacklist) and ``enabled`` (when False, scores are still
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
        self.rule = outlier_rule(params.rule, params)
        self.blacklisted: set[int] = set()
        #: Time at which each blacklisted client was blacklisted.
        self.blacklist_times: dict[int, float] = {}
        self._streak: dict[int, int] = {}
        self.num_scores = 0
        #: Bans the cap refused (a client reached ``rounds`` low scores in a full group).
        self.num_capped = 0
        #: Clients taken back after agreeing again on probation.
        self.num_readmitted = 0

    @property
    def rule(self) -> OutlierRule:
        """The outlier rule in force (``params.rule`` with its knobs).

        A checkpoint saved while the filter held the rule's name (a str) resumes with the
        rule of that name and default knobs: the filter reads none of the knobs (only
        :attr:`~fl_r2sp.fl.policies.outlier_rules.OutlierRule.streaks_ban`,
        :meth:`~fl_r2sp.fl.policies.outlier_rules.OutlierRule.excluded_at_start` and the
        name), so its decisions are those of the run that saved it.
        """
        held: OutlierRule | str = self.__dict__["rule"]
        if isinstance(held, str):
            held = self.__dict__["rule"] = outlier_rule(held, OutlierParams())
        return held

    @rule.setter
    def rule(self, rule: OutlierRule) -> None:
        self.__dict__["rule"] = rule

    def streak(self, cid: int) -> int:
        """Current number of consecutive low scores of ``cid``."""
        return self._streak.get(cid, 0)

    def is_low(self, score: float, cut: float | None = None) -> bool:
        """Whether ``score`` is a low round: below ``cut``, or below β when ``cut`` is None."""
        return score < (self.threshold if cut is None else cut)

    def observe(
        self, cid: int, score: float, now: float, cut: float | None = None, may_ban: bool = True
    ) -> bool:
        """Record one scored round of ``cid``; True iff it becomes blacklisted now.

        Parameters
        ----------
        cid : int
            The scored client.
        score : float
            Its cosine score.
        now : float
            Time of the scoring (kept as the blacklisting time).
        cut : float or None, default None
            The score is low below it; None: below β (the paper's rule).
        may_ban : bool, default True
            False when the client's group is full (the cap): the streak still grows, the
            ban is refused and counted in :attr:`num_capped`.
        """
        if cid in self.blacklisted:
            return False
        self.num_scores += 1
        if not self.is_low(score, cut):
            self._streak[cid] = 0
            return False
        self._streak[cid] = self._streak.get(cid, 0) + 1
        if not self.enabled or not self.rule.streaks_ban or self._streak[cid] < self.rounds:
            return False
        if not may_ban:
            self.num_capped += 1
            return False
        self._ban(cid, now)
        return True

    def exclude_known(self, clients: Iterable[int], now: float) -> list[int]:
        """At the start: blacklist those of ``clients`` the rule excludes before any score.

        Returns the ids blacklisted (sorted); none unless the filter is enabled and its
        rule excludes some (``oracle``: the known outliers among ``clients``).
        """
        if not self.enabled:
            return []
        banned = self.rule.excluded_at_start(clients, self.known_outliers)
        for cid in banned:
            self._ban(cid, now)
        return banned

    def readmit(self, cid: int) -> None:
        """Take blacklisted ``cid`` back (probation) with a fresh streak."""
        self.blacklisted.discard(cid)
        self.blacklist_times.pop(cid, None)
        self._streak[cid] = 0
        self.num_readmitted += 1

    def _ban(self, cid: int, now: float) -> None:
        self.blacklisted.add(cid)
        self.blacklist_times[cid] = float(now)

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
            "outlier_rule": self.rule.name,
            "blacklisted": sorted(self.blacklisted),
            "num_blacklisted": len(self.blacklisted),
            "known_outliers": sorted(self.known_outliers),
            "blacklist_precision": _num(self.precision()),
            "blacklist_recall": _num(self.recall()),
            "num_scores": self.num_scores,
            "num_capped": self.num_capped,
            "num_readmitted": self.num_readmitted,
        }

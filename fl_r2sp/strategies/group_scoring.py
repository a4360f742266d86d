"""Outlier scoring of a group's updates for FL-R²SP: cosine rows and blacklist glue.

A :class:`GroupScorer` holds the outlier knobs (:class:`~fl_r2sp.strategies.params.OutlierParams`)
and the :class:`~fl_r2sp.strategies.outliers.OutlierFilter`. After a group applies, it scores
the collected deltas against the group's reference delta
(:mod:`fl_r2sp.strategies.scoring`); optionally it scores stragglers against the group's last
reference. Each score yields a ``client_score`` row and, when the filter bans the client, a
``blacklist`` row followed by whatever the policy's ``shrink`` callback returns (the group's
bookkeeping stays in :class:`~fl_r2sp.strategies.flr2sp.FLR2SPPolicy`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fl_r2sp.strategies.aggregation import AggregationKind, coefficients
from fl_r2sp.strategies.base import Decision, Record, Update
from fl_r2sp.strategies.groups import GroupState
from fl_r2sp.strategies.outliers import OutlierFilter, cosine
from fl_r2sp.strategies.params import OutlierParams
from fl_r2sp.strategies.reference_scores import reference_cosines, score_field
from fl_r2sp.strategies.scoring import (
    CosineReferenceKind,
    client_references,
    group_reference,
)

#: ``shrink(now, group, why)``: the policy's reaction to one active member fewer.
Shrink = Callable[[float, GroupState, str], list[Decision]]


class GroupScorer:
    """Scores FL-R²SP group updates and feeds the outlier filter.

    Parameters
    ----------
    params : OutlierParams
        The cosine outlier filter's knobs (warmup, reference, straggler scoring, all
        references; :class:`~fl_r2sp.strategies.params.OutlierParams` states each default).
    known_outliers : frozenset of int
        Ground truth for blacklist precision/recall.
    aggregation : AggregationKind
        The intra-group mean's kind (its coefficients weight the leave-one-out references).
    """

    def __init__(
        self,
        params: OutlierParams,
        known_outliers: frozenset[int],
        aggregation: AggregationKind,
    ) -> None:
        self.warmup = int(params.warmup)
        self.reference: CosineReferenceKind = params.reference
        self.stragglers = bool(params.score_stragglers)
        self.all_references = bool(params.all_references)
        self.aggregation: AggregationKind = aggregation
        self.filter = OutlierFilter(params, known_outliers)

    def score_round(
        self,
        now: float,
        group: GroupState,
        w_after: np.ndarray,
        w_before: np.ndarray,
        shrink: Shrink,
    ) -> list[Decision]:
        """Score the collected updates of the round ``group`` just applied.

        Sets ``group.last_reference`` (used for stragglers) even during the warmup.
        """
        assert group.intra is not None
        ref = group_reference(self.reference, group.start, group.intra, w_after, w_before)
        group.last_reference = ref
        if group.round < self.warmup:
            return []
        vectors = [u.weights for u in group.collected]
        coefs = coefficients(group.collected, self.aggregation)
        refs = client_references(self.reference, vectors, coefs, group.start, ref)
        start = np.asarray(group.start, dtype=np.float64)
        every: list[dict[str, float]] = [{} for _ in vectors]
        if self.all_references:  # the same updates under every reading, for comparison
            every = reference_cosines(group.start, group.intra, w_after, w_before, vectors, coefs)
        out: list[Decision] = []
        for update, reference, more in zip(group.collected, refs, every, strict=True):
            delta = np.asarray(update.weights, dtype=np.float64) - start
            score = cosine(delta, reference)
            out += self.observe(now, group, update.cid, score, False, shrink, more)
        return out

    def score_straggler(
        self, now: float, group: GroupState, update: Update, sent: np.ndarray, shrink: Shrink
    ) -> list[Decision]:
        """Score a straggler against the group's last reference (when enabled and known)."""
        if not self.stragglers or group.last_reference is None:
            return []
        delta = np.asarray(update.weights, np.float64) - np.asarray(sent, np.float64)
        score = cosine(delta, group.last_reference)
        return self.observe(now, group, update.cid, score, True, shrink)

    def observe(
        self,
        now: float,
        group: GroupState,
        cid: int,
        score: float,
        straggler: bool,
        shrink: Shrink,
        every: dict[str, float] | None = None,
    ) -> list[Decision]:
        """Feed one score to the filter: a ``client_score`` row, a ``blacklist`` row if banned."""
        banned = self.filter.observe(cid, score, now)
        out: list[Decision] = [
            Record(
                "client_score",
                {
                    "t": now,
                    "cid": cid,
                    "group": group.gid,
                    "round": group.round,
                    "cosine": score,
                    "streak": self.filter.streak(cid),
                    "straggler": straggler,
                    **{score_field(k): v for k, v in (every or {}).items()},
                },
            )
        ]
        if banned:
            out.append(
                Record(
                    "blacklist",
                    {
                        "t": now,
                        "cid": cid,
                        "group": group.gid,
                        "known_outlier": cid in self.filter.known_outliers,
                    },
                )
            )
            out += shrink(now, group, f"client {cid} blacklisted")
        return out

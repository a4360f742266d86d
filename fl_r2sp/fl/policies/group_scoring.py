"""Outlier scoring of a group's updates for FL-R²SP: cosine rows and blacklist glue.

A :class:`GroupScorer` holds the outlier knobs (:class:`~fl_r2sp.fl.policies.params.OutlierParams`)
and the :class:`~fl_r2sp.fl.policies.outliers.OutlierFilter`. After a group applies, it scores
the collected deltas against the group's reference delta
(:mod:`fl_r2sp.fl.policies.scoring`), with the cut of the rule
(:class:`~fl_r2sp.fl.policies.outlier_rules.OutlierRule`: β, or the round's robust cut);
optionally it scores stragglers against the group's last reference and cut. Each score yields
a ``client_score`` row and, when the filter bans the client, a ``blacklist`` row followed by
whatever the policy's ``shrink`` callback returns (the group's bookkeeping stays in
:class:`~fl_r2sp.fl.policies.flr2sp.FLR2SPPolicy`). Where the rule has one (the relative
rule), it also applies the cap and judges probation updates (a ``probation`` row each).
"""

from __future__ import annotations

from collections.abc import Callable, Container
from functools import cached_property

import numpy as np

from fl_r2sp.fl.policies.aggregation import AggregationKind, coefficients
from fl_r2sp.fl.policies.base import Decision, Record, Update
from fl_r2sp.fl.policies.flr2sp_records import blacklist_record
from fl_r2sp.fl.policies.groups import GroupState
from fl_r2sp.fl.policies.outlier_rules import OutlierRule, outlier_rule
from fl_r2sp.fl.policies.outliers import OutlierFilter, cosine
from fl_r2sp.fl.policies.params import OutlierParams
from fl_r2sp.fl.policies.reference_scores import reference_cosines, score_field
from fl_r2sp.fl.policies.scoring import (
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
        references; :class:`~fl_r2sp.fl.policies.params.OutlierParams` states each default).
    known_outliers : frozenset of int
        Ground truth for blacklist precision/recall.
    aggregation : AggregationKind
        The intra-group mean's kind (its coefficients weight the leave-one-out references).
    fraction : float
        C, the collection fraction (the cap keeps ``ceil(C * members)`` members active).
    """

    def __init__(
        self,
        params: OutlierParams,
        known_outliers: frozenset[int],
        aggregation: AggregationKind,
        fraction: float,
    ) -> None:
        self.params = params
        self.warmup = int(params.warmup)
        self.reference: CosineReferenceKind = params.reference
        self.stragglers = bool(params.score_stragglers)
        self.all_references = bool(params.all_references)
        self.aggregation: AggregationKind = aggregation
        self.fraction = float(fraction)
        #: Group rounds between a ban (or a failed probation) and the next probation job.
        self.probation = self.rule.probation
        self.filter = OutlierFilter(params, known_outliers)
        self._cuts: dict[int, float] = {}  # group -> cut of its latest scored round
        self._since: dict[int, int] = {}  # blacklisted client -> group round of its ban/probe

    @cached_property
    def rule(self) -> OutlierRule:
        """The outlier rule of :attr:`params` (``params.rule`` with its knobs).

        Built on first use rather than in ``__init__``, so a checkpoint saved before the
        scorer held its rule as an object (it held a ``relative`` flag) resumes with it.
        """
        return outlier_rule(self.params.rule, self.params)

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
        scores = [
            cosine(np.asarray(u.weights, dtype=np.float64) - start, r)
            for u, r in zip(group.collected, refs, strict=True)
        ]
        self._round_cut(group, scores)
        out: list[Decision] = []
        for update, score, more in zip(group.collected, scores, every, strict=True):
            out += self.observe(now, group, update.cid, score, False, shrink, more)
        for update in group.probation:  # judged by the round's cut, never aggregated
            out.append(self.judge_probation(now, group, update, group.start, group.round))
        return out

    def score_straggler(
        self, now: float, group: GroupState, update: Update, sent: np.ndarray, shrink: Shrink
    ) -> list[Decision]:
        """Score a straggler against the group's last reference (when enabled and known).

        A straggler of a warm-up round is not scored: the warm-up leaves whole rounds unscored;
        nor is one under a rule with cuts per round before its group has a scored round (no
        cut yet).
        """
        if not self.stragglers or group.last_reference is None or update.tag < self.warmup:
            return []
        if self.rule.cuts_per_round and group.gid not in self._cuts:
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
        """Feed one score to the filter: a ``client_score`` row, a ``blacklist`` row if banned.

        The cut is the group's latest (a rule with cuts per round; the row's ``cut`` field),
        or β (None: the other rules keep no cuts).
        """
        cut = self._cuts.get(group.gid)
        banned = self.filter.observe(cid, score, now, cut, self._may_ban(group))
        row = {
            "t": now,
            "cid": cid,
            "group": group.gid,
            "round": group.round,
            "cosine": score,
            "streak": self.filter.streak(cid),
            "straggler": straggler,
            **({"cut": cut} if self.rule.cuts_per_round else {}),
            **{score_field(k): v for k, v in (every or {}).items()},
        }
        out: list[Decision] = [Record("client_score", row)]
        if banned:
            self._since[cid] = group.round
            out.append(blacklist_record(now, group, cid, cid in self.filter.known_outliers))
            out += shrink(now, group, f"client {cid} blacklisted")
        return out

    def judge_probation(
        self, now: float, group: GroupState, update: Update, start: np.ndarray, round_: int
    ) -> Record:
        """Score a blacklisted client's probation update; readmit it when it is not low.

        ``start`` is the model its job carried (the group's start of round ``round_``); the
        reference and cut are the group's latest. Returns the ``probation`` row.
        """
        assert group.last_reference is not None  # set by every application
        delta = np.asarray(update.weights, np.float64) - np.asarray(start, np.float64)
        score = cosine(delta, group.last_reference)
        cut = self._cuts.get(group.gid)
        back = not self.filter.is_low(score, cut)
        if back:
            self.filter.readmit(update.cid)
            self._since.pop(update.cid, None)
        else:
            self._since[update.cid] = group.round
        fields = {"t": now, "cid": update.cid, "group": group.gid, "round": round_}
        return Record("probation", {**fields, "cosine": score, "cut": cut, "readmitted": back})

    def due(self, group: GroupState, busy: Container[int]) -> list[int]:
        """Blacklisted members of ``group`` not in ``busy`` whose probation job is due now.

        They are marked as sent: the next one is due ``probation`` group rounds later.
        """
        if not self.probation:
            return []
        due = [
            c
            for c in group.members
            if c in self._since and c not in busy and group.round - self._since[c] >= self.probation
        ]
        for cid in due:
            self._since[cid] = group.round
        return due

    def _round_cut(self, group: GroupState, scores: list[float]) -> None:
        """Keep the rule's cut of this group round, if it has one (its stragglers use it too)."""
        cut = self.rule.round_cut(scores)
        if cut is not None:
            self._cuts[group.gid] = cut

    def _may_ban(self, group: GroupState) -> bool:
        """Whether the rule's cap leaves room for one more ban in ``group`` (always without one)."""
        allowed = self.rule.allowance(len(group.members), self.fraction)
        if allowed is None:
            return True
        return len(self.filter.blacklisted.intersection(group.members)) < allowed

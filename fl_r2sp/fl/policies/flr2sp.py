"""FL-R²SP policy: Algorithm 2 of the paper as an event-driven state machine.

Readings of the paper's ambiguities (the open points: ``docs/paper-notes.md``
§2.3; our choices and their knobs: ``docs/architecture.md`` §6), each a
field of :class:`~fl_r2sp.fl.policies.params.GroupParams` or
:class:`~fl_r2sp.fl.policies.params.OutlierParams`:

* client ``cid`` belongs to group ``cid % M``; at ``start`` every client gets
  the initial model (tag = group round 0);
* a group round collects the first ``ceil(C * active)`` updates tagged with the
  group's current round (active = not blacklisted, not dropped, so
  blacklisting never deadlocks a group); an update rejected by admission
  answers the round (it counts toward the threshold) but is excluded from the
  mean; a group whose every answer was rejected passes its turn with the model
  unchanged; ``max_rejections + 1`` rejections in a row drop the client;
* the round time is ``t_collect - t_release`` (no turn waiting) and feeds the
  EMA ``T`` when the group applies (Algorithm 2, line 17);
* a collected group applies in fixed order G0, G1, ... (``strict_order``; else
  any collected group, scanning from the turn pointer) and not before
  ``t_last_apply + r * T / M``; with ``M = 1`` there is nothing to stagger
  and the gap is 0 (the paper: one group *is* BSP);
* the global update is ``w <- (M-1)/M * w + 1/M * group_mean``; the group's
  collected clients and held stragglers get the new model, tagged with the
  next group round;
* a straggler (older tag, or arriving while the group waits for its turn) is
  not aggregated: it gets the group's newest model at once, or is held and
  released with the others if the group has collected but not yet applied;
* collected deltas are scored by cosine against the reference delta
  (:mod:`fl_r2sp.fl.policies.scoring`) after the application; a client is
  excluded from the round *after* its ``rounds``-th consecutive low score
  (what is low: ``outlier-rule``, :mod:`fl_r2sp.fl.policies.outlier_rules`; the
  ``oracle`` rule excludes the known outliers at ``start`` instead);
* probation (``relative`` rule, ``outlier-probation = K > 0``): K group rounds
  after its ban a blacklisted member is sent the group's new model with the
  others; its update is held with the round, scored with it, never aggregated
  nor counted toward the threshold, and readmits the client when not low (a
  late one is judged on arrival against the group's latest reference).

Failure, rejection and rejoin handlers: :mod:`fl_r2sp.fl.policies.flr2sp_liveness`.
Records: :mod:`fl_r2sp.fl.policies.flr2sp_records` lists every row kind and its fields;
the outlier scoring (``client_score``, ``blacklist``) is :mod:`fl_r2sp.fl.policies.group_scoring`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from fl_r2sp.fl.policies.aggregation import AggregationKind, aggregate, mix
from fl_r2sp.fl.policies.base import (
    Decision,
    ModelUpdated,
    Policy,
    Record,
    Send,
    Stop,
    Timer,
    Update,
)
from fl_r2sp.fl.policies.common import (
    FailureCounter,
    as_model,
    check_start_clients,
    client_list,
    ignored,
)
from fl_r2sp.fl.policies.flr2sp_liveness import GroupLiveness
from fl_r2sp.fl.policies.flr2sp_records import (
    apply_record,
    arrival_record,
    blacklist_record,
    collect_record,
    empty_record,
    pass_record,
)
from fl_r2sp.fl.policies.group_scoring import GroupScorer
from fl_r2sp.fl.policies.groups import GroupState, RoundTimeEMA, fraction_need
from fl_r2sp.fl.policies.outliers import OutlierFilter
from fl_r2sp.fl.policies.params import (
    MAX_FAILURES,
    MAX_REJECTIONS,
    GroupParams,
    OutlierParams,
    SchemeParams,
)
from fl_r2sp.fl.policies.scoring import CosineReferenceKind


class FLR2SPPolicy(GroupLiveness, Policy):
    """FL-R²SP decision logic (see the module docstring for the semantics).

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count ``N`` for ids ``0..N-1``).
    group : GroupParams, default GroupParams()
        M, C, r, the EMA of T, the group order and the intra-group mean
        (:class:`~fl_r2sp.fl.policies.params.GroupParams` states each default);
        M must not exceed the number of clients.
    outliers : OutlierParams, default OutlierParams()
        The cosine outlier filter (:class:`~fl_r2sp.fl.policies.params.OutlierParams`).
    known_outliers : frozenset of int, default empty
        Ground truth for blacklist precision/recall.
    max_failures : int, default MAX_FAILURES (3)
        Consecutive failed jobs re-sent before the client is dropped.
    max_rejections : int, default MAX_REJECTIONS (3)
        Consecutive rejected updates tolerated before the client is dropped.
    """

    name = "fl-r2sp"

    def __init__(
        self,
        clients: int | Sequence[int],
        group: GroupParams | None = None,
        outliers: OutlierParams | None = None,
        known_outliers: frozenset[int] = frozenset(),
        max_failures: int = MAX_FAILURES,
        max_rejections: int = MAX_REJECTIONS,
    ) -> None:
        group = group if group is not None else GroupParams()
        outliers = outliers if outliers is not None else OutlierParams()
        self._clients = client_list(clients)
        if not group.num_groups <= len(self._clients):
            raise ValueError(
                f"num_groups={group.num_groups} must lie in [1, number of clients "
                f"= {len(self._clients)}]"
            )
        self.group_params, self.outlier_params = group, outliers
        self.num_groups = int(group.num_groups)
        self.fraction = float(group.fraction)
        self.gap_factor = float(group.gap_factor)
        self.strict_order = bool(group.strict_order)
        self.aggregation: AggregationKind = group.aggregation
        self.robust = group.robust
        self.scorer = GroupScorer(outliers, known_outliers, self.aggregation, self.fraction)
        self.failures = FailureCounter(max_failures, max_rejections)
        self.ema = RoundTimeEMA(group.ema_weight, group.initial_round_time)
        self._groups: list[GroupState] = []
        self._w = np.zeros(0, dtype=np.float32)
        self._version = 0
        self._turn = 0
        self._last_apply = -math.inf
        self._timer_key: Hashable | None = None
        self._inflight: dict[int, tuple[int, np.ndarray]] = {}
        self._stopped = False
        self._active: list[int] = []  # active members per group, kept up to date
        self.num_stragglers = 0

    @classmethod
    def from_scheme(
        cls, clients: Sequence[int], scheme: SchemeParams, known_outliers: frozenset[int]
    ) -> FLR2SPPolicy:
        """The policy a run configuration's scheme knobs describe (the registry's builder)."""
        return cls(
            clients,
            scheme.group,
            scheme.outliers,
            known_outliers,
            scheme.max_failures,
            scheme.max_rejections,
        )

    # ------------------------------------------------------------------ API
    @property
    def filter(self) -> OutlierFilter:
        """The outlier filter (streaks, blacklist) the scorer feeds."""
        return self.scorer.filter

    @property
    def outlier_warmup(self) -> int:
        """Group rounds left unscored at the start."""
        return self.scorer.warmup

    @property
    def cosine_reference(self) -> CosineReferenceKind:
        """The reference delta clients are scored against."""
        return self.scorer.reference

    @property
    def score_stragglers(self) -> bool:
        """Whether straggler updates are scored too."""
        return self.scorer.stragglers

    @property
    def score_all_references(self) -> bool:
        """Whether every reference's cosine is recorded."""
        return self.scorer.all_references

    @property
    def weights(self) -> np.ndarray:
        return self._w

    @property
    def version(self) -> int:
        return self._version

    def group_of(self, cid: int) -> int:
        """Group id of client ``cid`` (``cid % M``)."""
        return cid % self.num_groups

    def start(self, now: float, weights: np.ndarray, clients: Sequence[int]) -> list[Decision]:
        check_start_clients(self._clients, clients)
        self._w = as_model(weights)
        self._groups = [
            GroupState(
                g,
                tuple(c for c in self._clients if c % self.num_groups == g),
                start=self._w,
                t_release=float(now),
            )
            for g in range(self.num_groups)
        ]
        out: list[Decision] = [  # the oracle rule: the known outliers never get a job
            blacklist_record(now, self._groups[self.group_of(c)], c, True)
            for c in self.filter.exclude_known(self._clients, now)
        ]
        self._active = [sum(self._is_active(c) for c in g.members) for g in self._groups]
        for group in self._groups:
            out += self._send(group, self._initial_targets(group))
        return out + self._advance(now)

    def on_update(self, now: float, update: Update) -> list[Decision]:
        cid = self._known(update.cid)
        job = self._inflight.pop(cid, None)
        group = self._groups[self.group_of(cid)]
        if job is not None and cid in self.filter.blacklisted:
            return self._probation(now, group, update, job[1]) + self._advance(now)
        if job is None or not self._is_active(cid):
            return [ignored(now, cid, "update", "no job in flight or client inactive")]
        self.failures.success(cid)
        if update.tag > group.round:
            raise ValueError(
                f"update of client {cid} has tag {update.tag} but group {group.gid} is only "
                f"at round {group.round}: tags must echo the Send.tag of the job"
            )
        if update.tag < group.round or group.ready:
            return self._straggler(now, group, update, job[1]) + self._advance(now)
        group.collected.append(update)
        out: list[Decision] = [self._arrival(now, group, update, False, "collected")]
        return out + self._check_collect(now, group) + self._advance(now)

    def on_timer(self, now: float, key: Hashable) -> list[Decision]:
        if key != self._timer_key:
            return []  # stale: the application it waited for already happened
        self._timer_key = None
        return self._advance(now)

    def summary(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "version": self._version,
            "num_groups": self.num_groups,
            "group_rounds": [g.round for g in self._groups],
            "round_time_estimate": self.ema.value,
            "gap": self._gap(),
            "num_stragglers": self.num_stragglers,
            "num_failures": self.failures.total,
            "num_rejected": self.failures.rejected_total,
            "dropped": sorted(self.failures.dropped),
            **self.filter.summary(),
        }

    # ------------------------------------------------------- hooks (BSP)
    def _initial_targets(self, group: GroupState) -> list[int]:
        """Clients that get the initial model (default: every member)."""
        return list(group.members)

    def _need(self, group: GroupState) -> int:
        """Updates that complete a round (default: ``ceil(C * active)``)."""
        return fraction_need(self.fraction, self._num_active(group))

    def _release_targets(self, group: GroupState, finished: list[int]) -> list[int]:
        """Who gets the new round's model (default: collected + held clients)."""
        return finished

    def _rejoin_targets(self, group: GroupState, cid: int) -> list[int]:
        """Who gets the current round's model when ``cid`` is taken back (default: it)."""
        return [cid]

    # ------------------------------------------------------------ helpers
    def _known(self, cid: int) -> int:
        cid = int(cid)
        if not self._groups:
            raise ValueError("event before start(): call start() first")
        if cid not in self._clients:
            raise ValueError(f"client {cid} is not one of this run's clients")
        return cid

    def _is_active(self, cid: int) -> bool:
        return cid not in self.filter.blacklisted and cid not in self.failures.dropped

    def _num_active(self, group: GroupState) -> int:
        return self._active[group.gid]

    def _shrink(self, now: float, group: GroupState, why: str) -> list[Decision]:
        """One active member fewer; a ``group_empty`` row when none is left."""
        self._active[group.gid] -= 1
        if self._active[group.gid] > 0:
            return []
        return [empty_record(now, group, why)]

    def _gap(self) -> float:
        if self.num_groups == 1:
            return 0.0
        return self.gap_factor * self.ema.value / self.num_groups

    def _send(self, group: GroupState, cids: Sequence[int]) -> list[Decision]:
        targets = tuple(sorted(c for c in set(cids) if self._is_active(c)))
        for cid in targets:
            self._inflight[cid] = (group.round, group.start)
        return [Send(targets, group.start, group.round)] if targets else []

    def _arrival(
        self, now: float, group: GroupState, update: Update, straggler: bool, action: str
    ) -> Record:
        return arrival_record(now, group, update, straggler, action)

    def _straggler(
        self, now: float, group: GroupState, update: Update, sent: np.ndarray
    ) -> list[Decision]:
        self.num_stragglers += 1
        out = self.scorer.score_straggler(now, group, update, sent, self._shrink)
        if not self._is_active(update.cid):
            action = "blacklisted"
            out += self._check_collect(now, group)  # active shrank: threshold may be met
        elif group.ready:
            action = "held"
            group.held.append(update.cid)
        else:
            action = "replied"
            out += self._send(group, [update.cid])
        return [self._arrival(now, group, update, True, action)] + out

    def _check_collect(self, now: float, group: GroupState) -> list[Decision]:
        need = self._need(group)
        if group.ready or not group.answered() or group.answered() < need:
            return []
        group.ready = True
        group.t_collect = float(now)
        group.round_time = float(now) - group.t_release
        # None: every answer was rejected; the group passes its turn (_pass).
        intra = (
            aggregate(group.collected, self.aggregation, self.robust) if group.collected else None
        )
        group.intra = intra
        return [collect_record(now, group, need)]

    def _advance(self, now: float) -> list[Decision]:
        """Apply every group allowed to apply at ``now``; else ask for a timer."""
        out: list[Decision] = []
        while not self._stopped:
            if not any(self._active):
                self._stopped = True
                out.append(Stop("no group has an active (non-blacklisted, non-dropped) client"))
                break
            group = self._candidate()
            if group is None:
                break
            if group.intra is None:  # nothing to apply: the turn passes now, no gap needed
                out += self._pass(now, group)
                continue
            earliest = self._last_apply + self._gap()
            if now < earliest:
                key = ("fl-r2sp-turn", self._version)
                if self._timer_key != key:
                    self._timer_key = key
                    out.append(Timer(earliest, key))
                break
            out += self._apply(now, group)
        return out

    def _candidate(self) -> GroupState | None:
        """The group that may apply next, if it has collected enough."""
        m = self.num_groups
        if not self.strict_order:
            ring = (self._groups[(self._turn + k) % m] for k in range(m))
            return next((g for g in ring if g.ready), None)
        for _ in range(m):  # skip groups left without active members (never deadlock)
            group = self._groups[self._turn]
            if group.ready or self._num_active(group) > 0:
                return group if group.ready else None
            self._turn = (self._turn + 1) % m
        return None

    def _apply(self, now: float, group: GroupState) -> list[Decision]:
        assert group.intra is not None  # set by _check_collect
        w_before, gap = self._w, self._gap()
        self._w = mix(w_before, group.intra, 1.0 / self.num_groups)
        self._version += 1
        self.ema.update(group.round_time)
        self._last_apply = float(now)
        self._turn = (group.gid + 1) % self.num_groups
        out: list[Decision] = [
            ModelUpdated(self._version, self._w),
            apply_record(now, group, self._version, self.ema.value, gap),
        ]
        out += self.scorer.score_round(now, group, self._w, w_before, self._shrink)
        back = self._readmitted(group, [u.cid for u in group.probation])
        finished = [u.cid for u in group.collected] + group.excluded + group.held + back
        group.next_round(now, self._w)
        return out + self._release(group, finished)

    def _pass(self, now: float, group: GroupState) -> list[Decision]:
        """The turn of a group whose every answer was rejected: no model change, next round."""
        self._turn = (group.gid + 1) % self.num_groups
        out: list[Decision] = [pass_record(now, group, self._version)]
        finished = group.excluded + group.held
        group.next_round(now, self._w)
        return out + self._release(group, finished)

    def _release(self, group: GroupState, finished: list[int]) -> list[Decision]:
        """Jobs of a new group round: its release targets, and blacklisted members on probation."""
        out = self._send(group, self._release_targets(group, finished))
        due = self.scorer.due(group, self._inflight)
        for cid in due:  # scored with the round (never aggregated) when the update comes
            self._inflight[cid] = (group.round, group.start)
        return out + ([Send(tuple(due), group.start, group.round)] if due else [])

    def _readmitted(self, group: GroupState, cids: list[int]) -> list[int]:
        """Those of ``cids`` that probation readmitted: the group has them active again."""
        back = [c for c in cids if c not in self.filter.blacklisted]
        self._active[group.gid] += len(back)
        return back

    def _probation(
        self, now: float, group: GroupState, update: Update, sent: np.ndarray
    ) -> list[Decision]:
        """A blacklisted client's probation update: judged with its round, or at once if late."""
        if update.tag == group.round:
            group.probation.append(update)
            return [self._arrival(now, group, update, False, "probation")]
        out: list[Decision] = [self._arrival(now, group, update, True, "probation")]
        out.append(self.scorer.judge_probation(now, group, update, sent, update.tag))
        if self._readmitted(group, [update.cid]):
            if group.ready:
                group.held.append(update.cid)
            else:
                out += self._send(group, [update.cid])
        return out

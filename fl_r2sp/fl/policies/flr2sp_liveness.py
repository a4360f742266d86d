"""FL-R²SP's answers to jobs that brought no usable update, and to clients that come back.

:class:`GroupLiveness` is mixed into :class:`~fl_r2sp.fl.policies.flr2sp.FLR2SPPolicy`
(and so :class:`~fl_r2sp.fl.policies.bsp.BSPPolicy`); it holds the three handlers that
keep a group from waiting on a member that will not deliver (``docs/architecture.md``
§6 and §9):

* ``on_failure`` (error reply, lost node): the member is re-sent the group's model
  (held until the group applies, if it has collected) and dropped after
  ``max_failures + 1`` failures in a row; the group's threshold follows the active
  members.
* ``on_rejected`` (the update arrived but failed admission): the member *answered*
  its round, so it counts toward the ``ceil(C · active)`` threshold, but it is
  excluded from the mean; it gets the group's next model with the others. A group
  whose every answer was rejected passes its turn with the model unchanged
  (``FLR2SPPolicy._pass``). ``max_rejections + 1`` rejections in a row drop it.
  A late (straggler) rejected update is held or re-sent like a failure.
* ``on_rejoin``: a dropped member reachable again is taken back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from fl_r2sp.fl.policies.base import Decision
from fl_r2sp.fl.policies.common import FailureCounter, ignored, rejoined
from fl_r2sp.fl.policies.flr2sp_records import failure_record, rejected_record
from fl_r2sp.fl.policies.group_scoring import GroupScorer
from fl_r2sp.fl.policies.groups import GroupState


class GroupLiveness:
    """Failure, rejection and rejoin handlers of a group policy (module docstring)."""

    failures: FailureCounter
    scorer: GroupScorer
    _groups: list[GroupState]
    _inflight: dict[int, tuple[int, np.ndarray]]
    _active: list[int]
    _stopped: bool
    _w: np.ndarray

    if TYPE_CHECKING:  # provided by FLR2SPPolicy

        def group_of(self, cid: int) -> int: ...
        def _known(self, cid: int) -> int: ...
        def _is_active(self, cid: int) -> bool: ...
        def _shrink(self, now: float, group: GroupState, why: str) -> list[Decision]: ...
        def _check_collect(self, now: float, group: GroupState) -> list[Decision]: ...
        def _send(self, group: GroupState, cids: Sequence[int]) -> list[Decision]: ...
        def _advance(self, now: float) -> list[Decision]: ...
        def _rejoin_targets(self, group: GroupState, cid: int) -> list[int]: ...

    def on_failure(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        cid = self._known(cid)
        if self._inflight.pop(cid, None) is None or not self._is_active(cid):
            return [ignored(now, cid, "failure", "no job in flight or client inactive")]
        group = self._groups[self.group_of(cid)]
        dropped = self.failures.failure(cid)
        consecutive = self.failures.consecutive(cid)
        out: list[Decision] = [failure_record(now, group, cid, tag, reason, consecutive, dropped)]
        if dropped:
            out += self._shrink(now, group, f"client {cid} dropped after repeated failures")
            out += self._check_collect(now, group)
        elif group.ready:
            group.held.append(cid)
        else:
            out += self._send(group, [cid])
        return out + self._advance(now)

    def on_rejected(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        cid = self._known(cid)
        if self._inflight.pop(cid, None) is None or not self._is_active(cid):
            return [ignored(now, cid, "rejected", "no job in flight or client inactive")]
        group = self._groups[self.group_of(cid)]
        out: list[Decision] = []
        if self.failures.rejection(cid):
            action = "dropped"
            out += self._shrink(now, group, f"client {cid} dropped after repeated rejections")
            out += self._check_collect(now, group)
        elif tag == group.round and not group.ready:
            action = "excluded"  # it answered this round: the threshold counts it
            group.excluded.append(cid)
            out += self._check_collect(now, group)
        elif group.ready:
            action = "held"
            group.held.append(cid)
        else:
            action = "replied"
            out += self._send(group, [cid])
        streak = self.failures.consecutive_rejections(cid)
        row = rejected_record(now, group, cid, tag, reason, streak, action)
        return [row, *out, *self._advance(now)]

    def on_rejoin(self, now: float, cid: int) -> list[Decision]:
        cid = self._known(cid)
        group = self._groups[self.group_of(cid)]
        blacklisted = cid in self.scorer.filter.blacklisted
        if self._stopped or blacklisted or not self.failures.revive(cid):
            return [rejoined(now, cid, group.gid, False)]  # it was never dropped: nothing to redo
        if self._active[group.gid] == 0 and not group.ready:
            # The group sat out: its round restarts now, from the current global model.
            group.start, group.t_release = self._w, float(now)
        self._active[group.gid] += 1
        out: list[Decision] = [rejoined(now, cid, group.gid, True)]
        if group.ready:
            group.held.append(cid)
        else:
            out += self._send(group, self._rejoin_targets(group, cid))
        return out + self._advance(now)

"""The telemetry rows FL-R²SP emits about its groups: one builder per row kind.

Records emitted by :class:`~fl_r2sp.fl.policies.flr2sp.FLR2SPPolicy` (``Record.kind``:
fields, every row has ``t``): ``client_update`` (cid, group, tag, round, straggler, action,
loss, num_examples) on every arrival; ``client_score`` (cid, group, round, cosine, streak,
straggler; with ``all_references`` also ``cosine_<reference>`` for every reference) when
scored (relative rule: also ``cut``); ``probation`` (cid, group, round, cosine, cut,
readmitted) when a blacklisted client's probation update is judged; ``group_collect``
(group, round, t_release, t_collect, round_time, collected, excluded, need); ``group_apply``
(group, round, version, t_apply, t_collect, turn_wait, T, gap); ``blacklist`` (cid, group,
known_outlier; at the start for the ``oracle`` rule's exclusions); ``client_failure`` (cid,
group, tag, reason, consecutive, dropped); ``client_rejected`` (cid, group, tag, reason,
consecutive, action: excluded / held / replied / dropped) when an update failed admission;
``group_pass`` (group, round, version, excluded) when a group's turn came with every answer
rejected (the model is unchanged); ``group_empty`` (group, round, why) when a group's last
active member is dropped or blacklisted (the fixed order skips it from then on);
``client_rejoin`` (cid, group, revived) when a lost client is reachable again (a dropped one
is taken back and gets the group's model; a group that was empty restarts its round from the
current global model); ``ignored`` (cid, what, why). ``client_score`` and ``probation``
rows are built by :mod:`fl_r2sp.fl.policies.group_scoring`; ``client_rejoin`` and ``ignored``
by :mod:`fl_r2sp.fl.policies.common`; the others here.
"""

from __future__ import annotations

from fl_r2sp.fl.policies.base import Record, Update
from fl_r2sp.fl.policies.groups import GroupState


def arrival_record(
    now: float, group: GroupState, update: Update, straggler: bool, action: str
) -> Record:
    """The ``client_update`` row of one arrival (``action``: what the policy did with it)."""
    return Record(
        "client_update",
        {
            "t": now,
            "cid": update.cid,
            "group": group.gid,
            "tag": update.tag,
            "round": group.round,
            "straggler": straggler,
            "action": action,
            "loss": update.loss,
            "num_examples": update.num_examples,
        },
    )


def blacklist_record(now: float, group: GroupState, cid: int, known_outlier: bool) -> Record:
    """The ``blacklist`` row of ``cid`` (``known_outlier``: in the partition's outlier ids)."""
    return Record(
        "blacklist", {"t": now, "cid": cid, "group": group.gid, "known_outlier": known_outlier}
    )


def failure_record(
    now: float, group: GroupState, cid: int, tag: int, reason: str, consecutive: int, dropped: bool
) -> Record:
    """The ``client_failure`` row of one failed job."""
    return _client_row("client_failure", now, group, cid, tag, reason, consecutive, dropped=dropped)


def _client_row(
    kind: str,
    now: float,
    group: GroupState,
    cid: int,
    tag: int,
    reason: str,
    consecutive: int,
    **fate: object,
) -> Record:
    """A row about one client's job in ``group`` (failure or rejection), plus its ``fate``."""
    row = {"t": now, "cid": cid, "group": group.gid, "tag": tag, "reason": reason}
    return Record(kind, {**row, "consecutive": consecutive, **fate})


def empty_record(now: float, group: GroupState, why: str) -> Record:
    """The ``group_empty`` row: the group's last active member is gone."""
    return Record("group_empty", {"t": now, "group": group.gid, "round": group.round, "why": why})


def collect_record(now: float, group: GroupState, need: int) -> Record:
    """The ``group_collect`` row of a group that has just collected ``need`` updates."""
    return Record(
        "group_collect",
        {
            "t": now,
            "group": group.gid,
            "round": group.round,
            "t_release": group.t_release,
            "t_collect": now,
            "round_time": group.round_time,
            "collected": [u.cid for u in group.collected],
            "excluded": list(group.excluded),
            "need": need,
        },
    )


def apply_record(
    now: float, group: GroupState, version: int, round_time_estimate: float, gap: float
) -> Record:
    """The ``group_apply`` row of a group's application (``T``: the EMA after it)."""
    return Record(
        "group_apply",
        {
            "t": now,
            "group": group.gid,
            "round": group.round,
            "version": version,
            "t_apply": now,
            "t_collect": group.t_collect,
            "turn_wait": now - group.t_collect,
            "T": round_time_estimate,
            "gap": gap,
        },
    )


def rejected_record(
    now: float, group: GroupState, cid: int, tag: int, reason: str, consecutive: int, action: str
) -> Record:
    """The ``client_rejected`` row of an update that failed admission (``action``: its fate)."""
    return _client_row("client_rejected", now, group, cid, tag, reason, consecutive, action=action)


def pass_record(now: float, group: GroupState, version: int) -> Record:
    """The ``group_pass`` row: the group's turn with every answer rejected; no model change."""
    return Record(
        "group_pass",
        {
            "t": now,
            "group": group.gid,
            "round": group.round,
            "version": version,
            "excluded": list(group.excluded),
        },
    )

"""DS-Sync knobs and the regrouping decision from measured communication times.

The paper regroups "every 100 iterations" when "bandwidth changes", from each worker's recorded
communication cost (``commRecord``), but gives no rule for deciding what is slow
(``docs/paper-notes.md`` §6). Ours:

* Every record is one group's all-reduce in one iteration: its members and its duration. A ring
  all-reduce of m members moves 2(m − 1)/m model sizes through each member, so the duration is
  divided by that factor (m >= 2; singletons carry no information and are skipped). This is the
  record's *normalised time*.
* A slow element (a NIC or an uplink) slows every group it is in, while a regular element is in
  at least some fast group over a period, so an element's *score* is the **minimum** normalised
  time over the records that involve it: a rank's records are the groups it belongs to; a rack
  uplink's records are the groups spanning several racks with a member of that rack.
* The reference is the median score of the ranks. A rank is *delayed* if its score exceeds
  ``slowness_threshold`` × reference; a rack is *slow* if its uplink's score does, unless the
  excess is already explained by a delayed member of that rack (every record of the uplink
  contains a delayed rank).

Limit: group durations alone cannot tell apart uplinks that only ever appear in the same
groups. Under the static pattern every crossing is the one inter-rack group, so one slow uplink
flags every rack; :func:`~.dssync.adjust_groups` with no regular rack then gives back the
static pattern (no change, and with two racks there is nothing better). Per-link probes (the
paper's ``topologyDetect``) would separate them; they are not built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fl_r2sp.cluster.policies.dssync.patterns import Group, Pattern, adjust_groups, check_racks


@dataclass(frozen=True)
class DSSyncParams:
    """DS-Sync's knobs.

    Parameters
    ----------
    period : int, default 100
        Iterations between regrouping decisions (the paper's only stated default).
    slowness_threshold : float, default 1.5
        k > 1: an element is slow when its score exceeds k × the median rank score (*ours*; the
        paper gives none. 1.5 sits between a regular path, ratio 1, and a path shared with one
        background flow, ratio about 2, the paper's "over 2x" contention).
    ema_factor : float, default 0.999
        Factor of the local EMA ("SWA") copy, ``ema = f·ema + (1 − f)·model`` (*ours*; not given).
    """

    period: int = 100
    slowness_threshold: float = 1.5
    ema_factor: float = 0.999

    def validate(self) -> DSSyncParams:
        """Check the knobs; return ``self``.

        Raises
        ------
        ValueError
            Naming the bad field.
        """
        if isinstance(self.period, bool) or not isinstance(self.period, int) or self.period < 1:
            raise ValueError(f"period must be an integer >= 1, got {self.period!r}")
        if not (math.isfinite(self.slowness_threshold) and self.slowness_threshold > 1.0):
            raise ValueError(f"slowness_threshold must be > 1, got {self.slowness_threshold!r}")
        if not 0.0 <= self.ema_factor < 1.0:
            raise ValueError(f"ema_factor must be in [0, 1), got {self.ema_factor!r}")
        return self


@dataclass(frozen=True)
class Bottlenecks:
    """What the detector found: slow rack indices and delayed ranks (both sorted)."""

    slow_racks: tuple[int, ...] = ()
    delayed: tuple[int, ...] = ()


def normalised_time(group: Group, seconds: float) -> float:
    """Duration divided by the ring factor 2(m − 1)/m (NaN for a singleton)."""
    m = len(group)
    return math.nan if m < 2 else seconds / (2.0 * (m - 1) / m)


def detect_bottlenecks(
    records: Sequence[tuple[Group, float]],
    racks: Sequence[Sequence[int]],
    slowness_threshold: float = 1.5,
) -> Bottlenecks:
    """Slow uplinks and delayed NICs from ``(group, seconds)`` records (module docstring).

    Raises
    ------
    ValueError
        On a bad rack map, a negative duration or a threshold <= 1.
    """
    n = check_racks(racks)
    if not slowness_threshold > 1.0:
        raise ValueError(f"slowness_threshold must be > 1, got {slowness_threshold!r}")
    rack_of = {r: k for k, rack in enumerate(racks) for r in rack}
    rank_score = [math.inf] * n
    uplink_recs: list[list[tuple[Group, float]]] = [[] for _ in racks]
    for group, seconds in records:
        if seconds < 0 or not math.isfinite(seconds):
            raise ValueError(f"communication time must be finite and >= 0, got {seconds!r}")
        x = normalised_time(group, seconds)
        if math.isnan(x):
            continue
        for r in group:
            rank_score[r] = min(rank_score[r], x)
        homes = {rack_of[r] for r in group}
        if len(homes) > 1:
            for k in homes:
                uplink_recs[k].append((group, x))
    seen = [s for s in rank_score if math.isfinite(s)]
    if not seen:
        return Bottlenecks()
    limit = slowness_threshold * float(np.median(seen))
    delayed = tuple(r for r in range(n) if math.isfinite(rank_score[r]) and rank_score[r] > limit)
    slow = []
    for k, recs in enumerate(uplink_recs):
        if not recs or min(x for _, x in recs) <= limit:
            continue
        if all(any(r in delayed for r in g) for g, _ in recs):
            continue  # a delayed NIC explains every slow crossing
        slow.append(k)
    return Bottlenecks(tuple(slow), delayed)


def regroup(
    records: Sequence[tuple[Group, float]],
    racks: Sequence[Sequence[int]],
    current: Bottlenecks,
    params: DSSyncParams,
) -> tuple[Bottlenecks, Pattern | None]:
    """The decision at a period boundary: the new bottlenecks and a new pattern if they changed.

    Returns ``(found, pattern)``; ``pattern`` is None when ``found == current`` (bandwidth did
    not change, keep the pattern).
    """
    params.validate()
    found = detect_bottlenecks(records, racks, params.slowness_threshold)
    if found == current:
        return found, None
    return found, adjust_groups(racks, found.slow_racks, found.delayed)

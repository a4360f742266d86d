"""Per-group state of FL-R²SP and the EMA estimate of the group round time."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fl_r2sp.fl.policies.base import Update


class RoundTimeEMA:
    """Exponential moving average ``T`` of group round times (paper: weight 0.1).

    Parameters
    ----------
    weight : float
        Weight ``a`` in (0, 1] of the latest observation:
        ``T <- (1 - a) * T + a * round_time`` (``GroupParams.ema_weight``).
    initial : float
        ``T`` (>= 0) before the first measurement (``GroupParams.initial_round_time``).
        When it is 0 ("unknown") the first measurement is taken as is
        (``T = round_time``) instead of being averaged with 0, which would make
        the gap start 10x too small and creep up over ~20 rounds; a positive
        ``initial`` is averaged normally. Both values come from a
        :class:`~fl_r2sp.fl.policies.params.GroupParams`, which validated them.
    """

    def __init__(self, weight: float, initial: float) -> None:
        self.weight = float(weight)
        self.value = float(initial)
        self.count = 0

    def update(self, round_time: float) -> float:
        """Fold in one measured round time; return the new ``T``."""
        if self.count == 0 and self.value == 0.0:
            self.value = float(round_time)
        else:
            self.value = (1.0 - self.weight) * self.value + self.weight * float(round_time)
        self.count += 1
        return self.value


@dataclass
class GroupState:
    """Mutable state of one FL-R²SP group.

    Attributes
    ----------
    gid : int
        Group id (clients with ``cid % M == gid``).
    members : tuple of int
        All member ids (including later blacklisted or dropped ones).
    start : np.ndarray
        Model every job of the current round was sent (``G.ω̄`` of the paper).
    round : int
        Current group round; jobs of this round carry it as their tag.
    t_release : float
        Time the current round was released (previous application).
    collected : list of Update
        Updates aggregated in the current round, in arrival order.
    excluded : list of int
        Members whose update of the current round was rejected by admission:
        they answered (they count toward the threshold) but are not aggregated.
    held : list of int
        Stragglers (and re-sent failures) waiting for the group's application.
    probation : list of Update
        Blacklisted members' probation updates of the current round: scored with the
        round, never aggregated (:class:`~fl_r2sp.fl.policies.group_scoring.GroupScorer`).
    ready : bool
        True once ``need`` updates are collected, until the group applies.
    """

    gid: int
    members: tuple[int, ...]
    start: np.ndarray
    round: int = 0
    t_release: float = 0.0
    collected: list[Update] = field(default_factory=list)
    excluded: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)
    probation: list[Update] = field(default_factory=list)
    ready: bool = False
    t_collect: float = math.nan
    round_time: float = math.nan
    intra: np.ndarray | None = None
    #: Reference delta of the latest application (to score late stragglers).
    last_reference: np.ndarray | None = None

    def answered(self) -> int:
        """Members that answered the current round (collected or excluded)."""
        return len(self.collected) + len(self.excluded)

    def next_round(self, now: float, model: np.ndarray) -> None:
        """Start the next round from ``model`` at time ``now``."""
        self.round += 1
        self.t_release = float(now)
        self.start = model
        self.collected = []
        self.excluded = []
        self.held = []
        self.probation = []
        self.ready = False
        self.t_collect = math.nan
        self.round_time = math.nan
        self.intra = None


def fraction_need(fraction: float, active: int) -> int:
    """``ceil(C * active)`` robust to float noise (0.3 * 10 must give 3, not 4)."""
    if active <= 0:
        return 0
    return max(1, math.ceil(round(fraction * active, 9)))

"""Which cosine scores count as low, and how many members of a group the filter may ban.

The outlier filter (:class:`~fl_r2sp.fl.policies.outliers.OutlierFilter`) counts
consecutive low scores; the rule (run-config key ``outlier-rule``) says what *low* is. Each
rule is one object implementing :class:`OutlierRule` (:class:`PaperRule`,
:class:`RelativeRule`, :class:`OracleRule`); :func:`outlier_rule` builds the one a name
stands for, so the filter and the group scorer ask the object, never the name:

* ``"paper"``: below the fixed threshold β (``cosine-threshold``), the paper's rule exactly;
  no cap, no probation;
* ``"relative"`` (the default rule, the best measured on the laptop CIFAR-10 partitions; the
  filter itself is off by default): below the group round's robust
  centre by more than k robust deviations,
  ``score < median - k * max(MAD_SCALE * MAD, floor)`` over the scores of that group round
  (the modified z-score of Iglewicz and Hoaglin, one-sided); the floor keeps a group whose
  honest scores agree closely from flagging a member for a small dip; at most
  :func:`blacklist_allowance` members of a group are blacklisted, and blacklisted members may
  be re-scored on probation (``docs/paper-notes.md`` §2.7 says why);
* ``"oracle"``: the partition's known outliers are excluded from the start and nobody else
  ever is (the ceiling of any filter; an experiment knob, never a default).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Literal, Protocol, get_args

import numpy as np

__all__ = [
    "MAD_SCALE",
    "OUTLIER_RULES",
    "OracleRule",
    "OutlierRule",
    "OutlierRuleKind",
    "PaperRule",
    "RelativeRule",
    "RuleKnobs",
    "blacklist_allowance",
    "outlier_rule",
    "robust_cut",
]

OutlierRuleKind = Literal["paper", "relative", "oracle"]
OUTLIER_RULES: tuple[str, ...] = get_args(OutlierRuleKind)

#: MAD times this estimates the standard deviation of normally distributed scores.
MAD_SCALE = 1.4826


def robust_cut(scores: Sequence[float], k: float, floor: float) -> float:
    """The relative rule's cut for one group round: scores strictly below it are low.

    Parameters
    ----------
    scores : sequence of float
        The cosine scores of the clients collected in the group round.
    k : float
        Robust deviations below the median that make a score low (``outlier-mad-k``).
    floor : float
        Least robust deviation, in cosine units (``outlier-mad-floor``).

    Returns
    -------
    float
        ``median - k * max(MAD_SCALE * MAD, floor)``; ``-inf`` without scores. With one
        or two scores no score lies below it when ``k * MAD_SCALE >= 1``: a pair's MAD is
        half their distance.
    """
    if not scores:
        return -math.inf
    values = np.asarray(scores, dtype=np.float64)
    centre = float(np.median(values))
    mad = float(np.median(np.abs(values - centre)))
    return centre - k * max(MAD_SCALE * mad, floor)


def blacklist_allowance(members: int, fraction: float, cap: float) -> int:
    """Most members of a group of ``members`` that the relative rule may blacklist.

    ``min(floor(cap * members), members - ceil(fraction * members))``: never more than the
    cap's share, and never so many that fewer than the group's full collection quorum
    ``ceil(C * members)`` stay active (so the group keeps its straggler tolerance).
    """
    quorum = math.ceil(round(fraction * members, 9))
    share = math.floor(round(cap * members, 9))
    return max(0, min(share, members - quorum))


class RuleKnobs(Protocol):
    """The knobs a rule reads (:class:`~fl_r2sp.fl.policies.params.OutlierParams` has them).

    A protocol rather than the record itself: the record's module imports this one for
    :data:`OutlierRuleKind`.
    """

    @property
    def mad_k(self) -> float: ...

    @property
    def mad_floor(self) -> float: ...

    @property
    def cap(self) -> float: ...

    @property
    def probation(self) -> int: ...


class OutlierRule(Protocol):
    """What one outlier rule decides; the filter and the group scorer ask nothing else.

    Attributes
    ----------
    name : str
        The rule's run-config name (``outlier-rule``), as the summary reports it.
    cuts_per_round : bool
        Whether each group round has a cut of its own (:meth:`round_cut` returns a float;
        a score row then carries it as ``cut``, and a straggler is scored only once its
        group has one); False: every score is judged against β.
    streaks_ban : bool
        Whether ``rounds`` consecutive low scores blacklist a client.
    probation : int
        Group rounds between a ban (or a failed probation) and the next probation job
        (0 = never).
    """

    @property
    def name(self) -> str: ...

    @property
    def cuts_per_round(self) -> bool: ...

    @property
    def streaks_ban(self) -> bool: ...

    @property
    def probation(self) -> int: ...

    def round_cut(self, scores: Sequence[float]) -> float | None:
        """The cut of one group round's ``scores``; None: the filter's β judges them."""
        ...

    def allowance(self, members: int, fraction: float) -> int | None:
        """Most of a group's ``members`` that may be blacklisted at once; None: no cap."""
        ...

    def excluded_at_start(self, clients: Iterable[int], known: frozenset[int]) -> list[int]:
        """Those of ``clients`` banned before any score (sorted); ``known``: the outliers."""
        ...

    def knobs(self, threshold: float) -> str:
        """The knobs this rule judges by, for a log line (``threshold``: the filter's β)."""
        ...


@dataclass(frozen=True)
class PaperRule:
    """The paper's rule: a score is low below the fixed β; no cap, no probation."""

    name: ClassVar[str] = "paper"
    cuts_per_round: ClassVar[bool] = False
    streaks_ban: ClassVar[bool] = True
    probation: ClassVar[int] = 0

    def round_cut(self, scores: Sequence[float]) -> float | None:
        """None: β judges every score."""
        return None

    def allowance(self, members: int, fraction: float) -> int | None:
        """None: any number of a group's members may be blacklisted."""
        return None

    def excluded_at_start(self, clients: Iterable[int], known: frozenset[int]) -> list[int]:
        """Nobody: only scores blacklist."""
        return []

    def knobs(self, threshold: float) -> str:
        """β, the fixed cut."""
        return f"beta={threshold:.2f}"


@dataclass(frozen=True)
class RelativeRule:
    """Low below the group round's robust cut; a cap per group; optional probation.

    Parameters
    ----------
    k : float, default 3.0
        Robust deviations below the median that make a score low (``outlier-mad-k``).
    floor : float, default 0.1
        Least robust deviation, in cosine units (``outlier-mad-floor``).
    cap : float, default 0.25
        Share of a group's members that may be blacklisted (``outlier-cap``; see
        :func:`blacklist_allowance`).
    probation : int, default 0
        Group rounds from a ban to the client's next probation job (``outlier-probation``;
        0 = never).
    """

    name: ClassVar[str] = "relative"
    cuts_per_round: ClassVar[bool] = True
    streaks_ban: ClassVar[bool] = True
    k: float = 3.0
    floor: float = 0.1
    cap: float = 0.25
    probation: int = 0

    def round_cut(self, scores: Sequence[float]) -> float | None:
        """:func:`robust_cut` of ``scores`` (``-inf`` without scores)."""
        return robust_cut(scores, self.k, self.floor)

    def allowance(self, members: int, fraction: float) -> int | None:
        """:func:`blacklist_allowance` of the group under the cap."""
        return blacklist_allowance(members, fraction, self.cap)

    def excluded_at_start(self, clients: Iterable[int], known: frozenset[int]) -> list[int]:
        """Nobody: only scores blacklist."""
        return []

    def knobs(self, threshold: float) -> str:
        """k, the floor and the cap (β means nothing to this rule)."""
        return f"k={self.k:g}, floor={self.floor:g}, cap={self.cap:g}"


@dataclass(frozen=True)
class OracleRule:
    """The known outliers are banned at the start; scores never ban (β only labels them)."""

    name: ClassVar[str] = "oracle"
    cuts_per_round: ClassVar[bool] = False
    streaks_ban: ClassVar[bool] = False
    probation: ClassVar[int] = 0

    def round_cut(self, scores: Sequence[float]) -> float | None:
        """None: scores are judged against β for the logs only."""
        return None

    def allowance(self, members: int, fraction: float) -> int | None:
        """None: scores never ban, so no cap applies."""
        return None

    def excluded_at_start(self, clients: Iterable[int], known: frozenset[int]) -> list[int]:
        """The known outliers among ``clients``, sorted."""
        return sorted(set(clients) & known)

    def knobs(self, threshold: float) -> str:
        """β, which labels the scores in the log (scores never ban)."""
        return f"beta={threshold:.2f}"


def _relative(params: RuleKnobs) -> OutlierRule:
    return RelativeRule(
        float(params.mad_k), float(params.mad_floor), float(params.cap), int(params.probation)
    )


_BUILDERS: Mapping[str, Callable[[RuleKnobs], OutlierRule]] = MappingProxyType(
    {
        "paper": lambda _params: PaperRule(),
        "relative": _relative,
        "oracle": lambda _params: OracleRule(),
    }
)


def outlier_rule(name: str, params: RuleKnobs) -> OutlierRule:
    """The rule called ``name``, with its knobs read from ``params``.

    Parameters
    ----------
    name : str
        One of :data:`OUTLIER_RULES` (``outlier-rule``).
    params : RuleKnobs
        The filter's knobs (an :class:`~fl_r2sp.fl.policies.params.OutlierParams`); only the
        named rule's own are read (``mad_k``, ``mad_floor``,
        ``cap`` and ``probation`` for ``relative``).

    Returns
    -------
    OutlierRule

    Raises
    ------
    ValueError
        ``name`` is no known rule; the message names it and the known rules.
    """
    build = _BUILDERS.get(name)
    if build is None:
        known = ", ".join(OUTLIER_RULES)
        raise ValueError(f"unknown outlier rule {name!r}: the rules are {known}")
    return build(params)

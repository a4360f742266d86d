"""Which cosine scores count as low, and how many members of a group the filter may ban.

The outlier filter (:class:`~fl_r2sp.fl.policies.outliers.OutlierFilter`) counts
consecutive low scores; the rule (run-config key ``outlier-rule``) says what *low* is:

* ``"paper"``: below the fixed threshold β (``cosine-threshold``), the paper's rule exactly;
  no cap, no probation;
* ``"relative"`` (the default rule, the best measured in issue 19; the filter itself is off
  by default): below the group round's robust
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
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

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

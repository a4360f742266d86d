"""Every cosine reading of one group round, to compare references on one trajectory.

The outlier filter acts on one reference (``cosine-reference``); the
experiment that compares the readings (``experiments/outliers_scoring.py``)
needs the score each client would have under *every* reference, computed
from the same collected updates. With the filter switched off the decisions
do not depend on any score, so a single run yields the exact score series of
all references; what blacklisting each would have caused is then replayed
offline (:func:`replay_blacklist`), and it equals the run with that
reference's filter on up to the first blacklisting (after that the run with
the filter would train on fewer clients).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from fl_r2sp.fl.policies.outliers import cosine
from fl_r2sp.fl.policies.scoring import REFERENCE_KINDS, client_references, group_reference


def reference_cosines(
    start: np.ndarray,
    intra: np.ndarray,
    w_new: np.ndarray,
    w_before: np.ndarray,
    vectors: Sequence[np.ndarray],
    coefs: Sequence[float],
) -> list[dict[str, float]]:
    """Each collected client's cosine under every reference kind.

    Parameters
    ----------
    start, intra, w_new, w_before : np.ndarray
        The group's start model, its intra-group aggregate, the global model
        right after and right before this group's application.
    vectors : sequence of np.ndarray
        The collected full weights, in aggregation order.
    coefs : sequence of float
        Their aggregation coefficients.

    Returns
    -------
    list of dict
        Per client, ``{kind: cosine}`` for every kind of
        :data:`~fl_r2sp.fl.policies.scoring.REFERENCE_KINDS`.
    """
    s = np.asarray(start, dtype=np.float64)
    deltas = [np.asarray(v, dtype=np.float64) - s for v in vectors]
    out: list[dict[str, float]] = [{} for _ in vectors]
    for kind in REFERENCE_KINDS:
        ref = group_reference(kind, start, intra, w_new, w_before)  # type: ignore[arg-type]
        refs = client_references(kind, vectors, coefs, start, ref)  # type: ignore[arg-type]
        for scores, delta, reference in zip(out, deltas, refs, strict=True):
            scores[kind] = cosine(delta, reference)
    return out


def score_field(kind: str) -> str:
    """Record field of reference ``kind``'s score: ``cosine_<kind>`` with ``_`` for ``-``."""
    return "cosine_" + kind.replace("-", "_")


def replay_blacklist(
    scores: Iterable[tuple[int, float]], threshold: float = 0.5, rounds: int = 3
) -> dict[int, int]:
    """Clients the filter rule would blacklist, replayed on a score series.

    Parameters
    ----------
    scores : iterable of (int, float)
        ``(cid, cosine)`` in the order the policy scored them.
    threshold : float, default 0.5
        β: a score strictly below it is a low round.
    rounds : int, default 3
        Consecutive low scored rounds that blacklist.

    Returns
    -------
    dict of int to int
        Blacklisted client -> index (0-based) of the score that blacklisted it.
        Same rule as :class:`~fl_r2sp.fl.policies.outliers.OutlierFilter`: any
        score >= β resets the streak, and a blacklisted client's later scores
        are ignored.
    """
    streak: dict[int, int] = {}
    banned: dict[int, int] = {}
    for i, (cid, score) in enumerate(scores):
        if cid in banned:
            continue
        streak[cid] = 0 if score >= threshold else streak.get(cid, 0) + 1
        if streak[cid] >= rounds:
            banned[cid] = i
    return banned


def blacklist_quality(banned: Mapping[int, int], outliers: frozenset[int]) -> dict[str, float]:
    """Honest clients blacklisted, precision and recall of ``banned`` against ``outliers``.

    Precision is NaN when nobody is blacklisted, recall NaN without outliers.
    """
    hit = len(set(banned) & outliers)
    return {
        "blacklisted": float(len(banned)),
        "honest_blacklisted": float(len(banned) - hit),
        "precision": hit / len(banned) if banned else float("nan"),
        "recall": hit / len(outliers) if outliers else float("nan"),
    }

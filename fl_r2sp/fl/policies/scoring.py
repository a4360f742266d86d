"""Reference deltas the FL-R²SP outlier filter compares each client delta with.

Every collected client of a group round started from the same model
``start`` (the paper's footnote 9), so its local update is the delta
``w_i - start``. The paper compares it with "the global update"; the readings
(``docs/paper-notes.md`` §2.3 item 1; ``docs/architecture.md`` §6 says which
is the paper's) are, by ``cosine_reference``:

* ``"global-change"`` (default, the paper's "global update"): the global
  model's change since the group started, ``w_new - start``, ``w_new`` the
  global model right after this group's application (it includes the other
  groups' progress; with one group it equals ``"group"``);
* ``"group"``: the group's aggregate delta ``intra - start`` (it contains
  the client itself, which biases the score);
* ``"group-loo"``: leave-one-out: the aggregate of the *other* collected
  clients minus ``start`` (with one client, the group's delta);
* ``"global-step"``: the global step just applied, ``w_new - w_before``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from fl_r2sp.fl.policies.aggregation import weighted_sum

CosineReferenceKind = Literal["group", "group-loo", "global-change", "global-step"]
REFERENCE_KINDS: tuple[str, ...] = get_args(CosineReferenceKind)


def group_reference(
    kind: CosineReferenceKind,
    start: np.ndarray,
    intra: np.ndarray,
    w_new: np.ndarray,
    w_before: np.ndarray,
) -> np.ndarray:
    """The one reference delta of a group round (float64); LOO uses the group's."""
    s = np.asarray(start, dtype=np.float64)
    if kind in ("group", "group-loo"):
        return np.asarray(intra, dtype=np.float64) - s
    if kind == "global-change":
        return np.asarray(w_new, dtype=np.float64) - s
    if kind == "global-step":
        return np.asarray(w_new, dtype=np.float64) - np.asarray(w_before, dtype=np.float64)
    raise ValueError(f"cosine_reference={kind!r} is not one of {', '.join(REFERENCE_KINDS)}")


def client_references(
    kind: CosineReferenceKind,
    vectors: Sequence[np.ndarray],
    coefs: Sequence[float],
    start: np.ndarray,
    group_ref: np.ndarray,
) -> list[np.ndarray]:
    """Reference delta for each collected client (the same one except for LOO).

    Parameters
    ----------
    kind : str
        One of :data:`REFERENCE_KINDS`.
    vectors : sequence of np.ndarray
        The collected full weights, in aggregation order.
    coefs : sequence of float
        Their aggregation coefficients (1 each, or sample counts).
    start : np.ndarray
        Model the clients started from.
    group_ref : np.ndarray
        Output of :func:`group_reference`.
    """
    if kind != "group-loo":
        return [group_ref] * len(vectors)
    total = weighted_sum(vectors, coefs)
    mass = float(sum(coefs))
    s = np.asarray(start, dtype=np.float64)
    refs = []
    for vector, coef in zip(vectors, coefs, strict=True):
        rest = mass - float(coef)
        if rest <= 0:
            refs.append(group_ref)  # nobody else: fall back to the group's delta
            continue
        others = (total - float(coef) * np.asarray(vector, dtype=np.float64)) / rest
        refs.append(others - s)
    return refs

"""OSP (2-stage synchronisation): the PS's layer choice and the worker's LGP rule, on NumPy.

Notation (``docs/paper-notes.md`` §7): per layer l, a worker's *local update* ``G^l`` and the
PS's aggregated *global update* ``G^g`` are applied parameter changes (``−η·∇`` for plain SGD),
so ``P ← P + G``. A per-layer *bitmap* (the Gradient Importance Bitmap, GIB) marks the
unimportant layers (``True``), synchronised in the background (ICS) during the next iteration;
the others go through the blocking routine synchronisation (RS).

PS side:

* :func:`layer_importance`: ``I_l = Σ_j |g_j · P_j|`` on the aggregated gradient and the global
  parameters (Eq. 4).
* :func:`select_ics_layers`: sort layers by score (ascending; ties by index) and take the
  least-important ones while they fit in the byte budget S(G^u). *Ours*: the fill stops at the
  first layer that does not fit (a prefix of the order), so a more important small layer never
  jumps a less important large one.
* :func:`u_max` and :class:`BudgetSchedule`: Algorithm 1 (in :mod:`.budget`).

Worker side (pure functions on lists of per-layer arrays, new arrays returned):

* :func:`lgp_step` (Eq. 6, with the local superscript on the unimportant sum): important layers
  take the global update, unimportant ones the local update; with LGP off they keep their old
  values until ICS returns.
* :func:`ics_correction` (Eq. 7): ``P += G^g − G^l`` on the unimportant layers when ICS returns,
  applied at the next iteration boundary (LGP off: ``P += G^g``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fl_r2sp.cluster.policies.osp.budget import BudgetSchedule, u_max

Array = NDArray[np.float64]
Bitmap = NDArray[np.bool_]

#: Layer-choice rules: the paper's importance, and the two ablations.
SELECTIONS: tuple[str, ...] = ("importance", "random", "topk")


__all__ = [
    "SELECTIONS",
    "BudgetSchedule",
    "ics_correction",
    "layer_importance",
    "layer_scores",
    "lgp_step",
    "select_ics_layers",
    "u_max",
]


def _check_layers(a: Sequence[Array], b: Sequence[Array], what: str) -> None:
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b, strict=False)):
        raise ValueError(f"{what}: layer counts or shapes differ")


def layer_importance(grads: Sequence[Array], params: Sequence[Array]) -> Array:
    """``I_l = Σ_j |g_j · P_j|`` per layer (Eq. 4).

    Raises
    ------
    ValueError
        If the layer lists differ in length or shapes.
    """
    _check_layers(grads, params, "layer_importance")
    return np.array([float(np.abs(g * p).sum()) for g, p in zip(grads, params, strict=True)])


def layer_scores(
    grads: Sequence[Array],
    params: Sequence[Array],
    selection: str,
    rng: np.random.Generator | None = None,
) -> Array:
    """Scores for :func:`select_ics_layers` under ``selection`` (lowest goes to ICS first).

    Raises
    ------
    ValueError
        On an unknown selection or "random" without ``rng``.
    """
    if selection == "importance":
        return layer_importance(grads, params)
    if selection == "topk":
        return np.array([float(np.abs(g).sum()) for g in grads])
    if selection == "random":
        if rng is None:
            raise ValueError("selection='random' needs a seeded rng")
        return rng.permutation(len(grads)).astype(float)
    raise ValueError(f"unknown selection {selection!r}; choose one of {SELECTIONS}")


def select_ics_layers(
    scores: Sequence[float], layer_bytes: Sequence[float], budget_bytes: float
) -> Bitmap:
    """GIB: True for the least-important layers whose sizes fit in ``budget_bytes`` together.

    Layers are taken in ascending score (ties: lower index first) until the next one would
    exceed the budget.

    Raises
    ------
    ValueError
        On length mismatch, a negative size, a negative or NaN budget, or a NaN score.
    """
    s = np.asarray(scores, dtype=float)
    size = np.asarray(layer_bytes, dtype=float)
    if s.shape != size.shape or s.ndim != 1:
        raise ValueError("scores and layer_bytes need one value per layer")
    if np.isnan(s).any() or (size < 0).any():
        raise ValueError("scores must not be NaN and layer sizes must be >= 0")
    if not budget_bytes >= 0:
        raise ValueError(f"budget_bytes must be >= 0, got {budget_bytes!r}")
    bitmap = np.zeros(len(s), dtype=bool)
    used = 0.0
    for layer in np.argsort(s, kind="stable"):
        if used + size[layer] > budget_bytes:
            break
        used += size[layer]
        bitmap[layer] = True
    return bitmap


def lgp_step(
    params: Sequence[Array],
    global_updates: Sequence[Array | None],
    local_updates: Sequence[Array],
    bitmap: Bitmap,
    lgp: bool = True,
) -> list[Array]:
    """``P_partial`` after RS (Eq. 6): global update on important layers, local on the others.

    ``global_updates[l]`` may be None for an unimportant layer (its global update is not back
    yet). With ``lgp=False`` unimportant layers are returned unchanged.

    Raises
    ------
    ValueError
        On mismatched layers or a missing global update of an important layer.
    """
    _check_layers(params, local_updates, "lgp_step")
    if len(bitmap) != len(params) or len(global_updates) != len(params):
        raise ValueError("lgp_step: bitmap and global_updates need one entry per layer")
    out = []
    for p, g, loc, ics in zip(params, global_updates, local_updates, bitmap, strict=True):
        if not ics:
            if g is None:
                raise ValueError("an important (RS) layer needs its global update")
            out.append(p + g)
        else:
            out.append(p + loc if lgp else p.copy())
    return out


def ics_correction(
    params: Sequence[Array],
    global_updates: Sequence[Array | None],
    local_updates: Sequence[Array],
    bitmap: Bitmap,
    lgp: bool = True,
) -> list[Array]:
    """Eq. 7 when ICS returns: ``P += G^g − G^l`` on the bitmap's layers (LGP off: ``+= G^g``).

    ``global_updates`` and ``local_updates`` are those of the iteration whose ICS returned
    (sum them first for a window of several iterations). Layers outside the bitmap are copied.

    Raises
    ------
    ValueError
        On mismatched layers or a missing global update of an ICS layer.
    """
    _check_layers(params, local_updates, "ics_correction")
    if len(bitmap) != len(params) or len(global_updates) != len(params):
        raise ValueError("ics_correction: bitmap and global_updates need one entry per layer")
    out = []
    for p, g, loc, ics in zip(params, global_updates, local_updates, bitmap, strict=True):
        if not ics:
            out.append(p.copy())
        elif g is None:
            raise ValueError("an ICS layer needs its global update for the correction")
        else:
            out.append(p + (g - loc) if lgp else p + g)
    return out

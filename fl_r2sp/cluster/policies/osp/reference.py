"""A NumPy reference of OSP's update sequence (N workers, one PS, plain SGD), for equivalences.

Iteration j of worker w: compute the local update ``u_w^j = −η ∇f_w(P_w^j)`` per layer; the PS
averages them (``ū^j``); RS returns ``ū^j`` on the important layers at once; LGP (Eq. 6) gives
``P_partial``; at the same boundary the ICS result of iteration j − 1 is applied (Eq. 7); the ICS
result of iteration j arrives during iteration j + 1 and is applied at the next boundary.

What the extremes equal (derived from the two rules; the tests check them):

* every layer in RS: ``P_w^{j+1} = P_w^j + ū^j``, BSP on the PS exactly.
* every layer in ICS, LGP on: ``P_w^{j+1} = x_j + u_w^j`` where ``x_j = x_0 + Σ_{i<j} ū^i`` is the
  PS's model; the gradient of iteration j + 1 is taken at the PS model one aggregate behind
  plus the worker's own last local step (a one-step-stale scheme whose staleness is predicted
  by the local step). With identical workers (``u_w = ū``) this is BSP again.
* every layer in ICS, LGP off: ``P_w^{j+1} = x_j``; ``x_{j+1} = x_j + ū(x_{j−1})``, i.e. SGD with
  gradients one step stale.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fl_r2sp.cluster.policies.osp.rules import Array, Bitmap, ics_correction, lgp_step

#: ``grad(worker, iteration, params) -> per-layer gradients``.
GradFn = Callable[[int, int, list[Array]], list[Array]]


def run_osp_reference(
    grad: GradFn,
    num_workers: int,
    params0: Sequence[Array],
    lr: float,
    iterations: int,
    bitmap_of: Callable[[int], Bitmap],
    lgp: bool = True,
) -> tuple[list[list[list[Array]]], list[Array]]:
    """Run OSP; return (params each worker used in each iteration, the PS's final model).

    ``history[j][w]`` is the per-layer parameters worker w computed on in iteration j; the PS's
    model includes every aggregate (the last ICS result is flushed at the end).

    Raises
    ------
    ValueError
        On N < 1, iterations < 0 or lr <= 0.
    """
    if num_workers < 1 or iterations < 0 or not lr > 0:
        raise ValueError("need num_workers >= 1, iterations >= 0 and lr > 0")
    workers = [[np.array(p, dtype=float) for p in params0] for _ in range(num_workers)]
    ps = [np.array(p, dtype=float) for p in params0]
    pending: list[tuple[list[Array], list[Array], Bitmap] | None] = [None] * num_workers
    history: list[list[list[Array]]] = []
    for j in range(iterations):
        history.append([[p.copy() for p in w] for w in workers])
        local = [[-lr * g for g in grad(w, j, workers[w])] for w in range(num_workers)]
        mean = [np.mean([loc[k] for loc in local], axis=0) for k in range(len(ps))]
        bitmap = np.asarray(bitmap_of(j), dtype=bool)
        ps = [p + m for p, m in zip(ps, mean, strict=True)]
        rs: list[Array | None] = [None if ics else m for m, ics in zip(mean, bitmap, strict=True)]
        for w in range(num_workers):
            new = lgp_step(workers[w], rs, local[w], bitmap, lgp)
            prev = pending[w]
            if prev is not None:  # ICS of iteration j − 1 returned during this iteration
                g_prev, l_prev, b_prev = prev
                new = ics_correction(new, list(g_prev), l_prev, b_prev, lgp)
            workers[w] = new
            pending[w] = (mean, local[w], bitmap)
    return history, ps


def run_bsp_reference(
    grad: GradFn, num_workers: int, params0: Sequence[Array], lr: float, iterations: int
) -> list[list[Array]]:
    """BSP on a PS: ``x_{j+1} = x_j − η·mean_w ∇f_w(x_j)``; returns ``x_0 … x_{iterations}``."""
    x = [np.array(p, dtype=float) for p in params0]
    out = [[p.copy() for p in x]]
    for j in range(iterations):
        local = [[-lr * g for g in grad(w, j, x)] for w in range(num_workers)]
        x = [p + np.mean([loc[k] for loc in local], axis=0) for k, p in enumerate(x)]
        out.append([p.copy() for p in x])
    return out

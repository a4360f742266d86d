"""Validators of DS-Sync patterns: partition, connectivity, mixing, one member per uplink.

The paper's convergence argument (``docs/paper-notes.md`` §6, "Theory") needs the group-average
matrices W_k (``w_ij = 1/|g|`` when i and j share a group g, else 0; symmetric, doubly
stochastic) to have a product over one period whose second-largest eigenvalue modulus ρ is < 1,
which holds exactly when the union of the period's groups connects every rank (each W_k has a
positive diagonal, so every edge of the union survives in the product).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fl_r2sp.cluster.policies.dssync.patterns import Pattern, Step, check_racks, union_connected

__all__ = [
    "RHO_TOL",
    "is_partition",
    "mixing_matrix",
    "pattern_rho",
    "period_product",
    "second_eigenvalue_modulus",
    "union_connected",
    "uplink_violations",
    "validate_pattern",
]

#: Tolerance of "ρ < 1": products of a few hundred averaging matrices stay well clear of it.
RHO_TOL: float = 1e-9


def is_partition(step: Step, num_workers: int) -> bool:
    """True if the groups of ``step`` are disjoint, non-empty and cover 0..N-1."""
    flat = [r for g in step for r in g]
    return all(len(g) > 0 for g in step) and sorted(flat) == list(range(num_workers))


def mixing_matrix(step: Step, num_workers: int) -> NDArray[np.float64]:
    """W of one step: ``w_ij = 1/|g|`` for i, j in the same group g, else 0.

    Raises
    ------
    ValueError
        If ``step`` is not a partition of 0..N-1.
    """
    if not is_partition(step, num_workers):
        raise ValueError(f"step {step!r} is not a partition of 0..{num_workers - 1}")
    w = np.zeros((num_workers, num_workers))
    for g in step:
        idx = np.asarray(g)
        w[np.ix_(idx, idx)] = 1.0 / len(g)
    return w


def period_product(matrices: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
    """``W_{B-1} … W_1 W_0`` (the first step is applied first)."""
    if len(matrices) == 0:
        raise ValueError("need at least one matrix")
    out = np.eye(matrices[0].shape[0])
    for w in matrices:
        out = w @ out
    return out


def second_eigenvalue_modulus(product: NDArray[np.float64]) -> float:
    """ρ: the second-largest eigenvalue modulus of a (doubly stochastic) matrix.

    An N = 1 matrix has ρ = 0 (nothing to mix).
    """
    if product.shape[0] < 2:
        return 0.0
    mods = np.sort(np.abs(np.linalg.eigvals(product)))[::-1]
    return float(mods[1])


def pattern_rho(pattern: Pattern) -> float:
    """ρ of the product of the pattern's mixing matrices over one period."""
    n = pattern.num_workers
    return second_eigenvalue_modulus(period_product([mixing_matrix(s, n) for s in pattern.steps]))


def uplink_violations(step: Step, racks: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Groups of ``step`` that span several racks with more than one member of some rack."""
    rack_of = {r: k for k, rack in enumerate(racks) for r in rack}
    bad = []
    for g in step:
        homes = [rack_of[r] for r in g]
        if len(set(homes)) > 1 and len(set(homes)) < len(homes):
            bad.append(g)
    return bad


def validate_pattern(
    pattern: Pattern, racks: Sequence[Sequence[int]] | None = None, one_per_uplink: bool = True
) -> Pattern:
    """Check every property; return ``pattern``.

    Parameters
    ----------
    pattern : Pattern
        The pattern to check.
    racks : sequence of sequence of int, optional
        Rack map for the uplink rule (skipped when None).
    one_per_uplink : bool, default True
        Require that a group spanning racks has at most one member per rack (False for the
        baselines that cross uplinks on purpose, e.g. one all-reduce group).

    Raises
    ------
    ValueError
        Naming the first property that fails.
    """
    n = pattern.num_workers
    if pattern.period < 1:
        raise ValueError("a pattern needs at least one step")
    for t, step in enumerate(pattern.steps):
        if not is_partition(step, n):
            raise ValueError(f"step {t} is not a partition of 0..{n - 1}: {step!r}")
    if not union_connected(pattern.steps, n):
        raise ValueError("the union of the period's groups does not connect every rank")
    rho = pattern_rho(pattern)
    if not rho < 1.0 - RHO_TOL:
        raise ValueError(f"the period's mixing product has rho = {rho:.6g}, not < 1")
    if racks is not None and one_per_uplink:
        if check_racks(racks) != n:
            raise ValueError(f"the rack map has a different number of ranks than {n}")
        for t, step in enumerate(pattern.steps):
            bad = uplink_violations(step, racks)
            if bad:
                raise ValueError(f"step {t}: groups {bad} put two members of a rack on an uplink")
    return pattern

"""BSP policy: synchronous rounds, literally FL-R²SP with one group.

``sampling="first-c"`` (default, the paper's BSP baseline): every active client
trains every round, the first ``ceil(C * N')`` replies are averaged and the
late ones are stragglers (they get the newest model at once). With one group
there is nothing to stagger, so no gap applies.

``sampling="sample"`` (Flower's ``FedAvg`` behaviour): each round draws
``ceil(C * N')`` active clients with ``np.random.default_rng([seed, round])``,
sends the model only to them and waits for *all* of them (a sampled client
dropped after repeated failures no longer counts); the others stay idle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fl_r2sp.fl.policies.base import Decision
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.groups import GroupState, fraction_need
from fl_r2sp.fl.policies.params import (
    BSP_SAMPLING,
    MAX_FAILURES,
    MAX_REJECTIONS,
    BspSamplingKind,
    GroupParams,
    OutlierParams,
    SchemeParams,
    check_bsp_sampling,
)


class BSPPolicy(FLR2SPPolicy):
    """Bulk-synchronous FL (FedAvg-style) on top of :class:`FLR2SPPolicy` with M = 1.

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count).
    group : GroupParams, default GroupParams()
        Only ``fraction`` (C: fraction of the active clients aggregated in
        first-c mode, sampled in sample mode), ``aggregation`` (unweighted
        mean, the paper's, sample-weighted, FedAvg's, or a robust reducer) and
        ``robust`` (its knobs) are read: BSP has one
        group and no gap, and keeps the other group knobs at their defaults.
    outliers : OutlierParams, default OutlierParams()
        As in :class:`FLR2SPPolicy`.
    sampling : {"first-c", "sample"}, default BSP_SAMPLING ("first-c")
        See the module docstring.
    seed : int
        Seed of the per-round client sample (``sample`` mode only); the run's seed.
    known_outliers, max_failures, max_rejections
        As in :class:`FLR2SPPolicy` (defaults empty, MAX_FAILURES = 3, MAX_REJECTIONS = 3).
    """

    name = "bsp"

    def __init__(
        self,
        clients: int | Sequence[int],
        group: GroupParams | None = None,
        outliers: OutlierParams | None = None,
        sampling: BspSamplingKind = BSP_SAMPLING,
        *,
        seed: int,
        known_outliers: frozenset[int] = frozenset(),
        max_failures: int = MAX_FAILURES,
        max_rejections: int = MAX_REJECTIONS,
    ) -> None:
        check_bsp_sampling(sampling)
        group = group if group is not None else GroupParams()
        one_group = GroupParams(
            num_groups=1,
            fraction=group.fraction,
            gap_factor=0.0,
            aggregation=group.aggregation,
            robust=group.robust,
        )
        super().__init__(clients, one_group, outliers, known_outliers, max_failures, max_rejections)
        self.sampling: BspSamplingKind = sampling
        self.seed = int(seed)
        self._sampled: tuple[int, ...] = ()
        self._draws = 0  # redraws within one round (all sampled clients dropped)

    @classmethod
    def from_scheme(
        cls, clients: Sequence[int], scheme: SchemeParams, known_outliers: frozenset[int]
    ) -> BSPPolicy:
        """The policy a run configuration's scheme knobs describe (the registry's builder)."""
        return cls(
            clients,
            scheme.group,
            scheme.outliers,
            scheme.bsp_sampling,
            seed=scheme.seed,
            known_outliers=known_outliers,
            max_failures=scheme.max_failures,
            max_rejections=scheme.max_rejections,
        )

    def sampled(self) -> tuple[int, ...]:
        """Clients sampled for the current round (``sample`` mode; else empty)."""
        return self._sampled

    def summary(self) -> dict[str, Any]:
        return {**super().summary(), "sampling": self.sampling}

    # ------------------------------------------------------------- hooks
    def _initial_targets(self, group: GroupState) -> list[int]:
        if self.sampling == "first-c":
            return super()._initial_targets(group)
        return self._draw(group)

    def _need(self, group: GroupState) -> int:
        if self.sampling == "first-c":
            return super()._need(group)
        return sum(1 for c in self._sampled if self._is_active(c))

    def _release_targets(self, group: GroupState, finished: list[int]) -> list[int]:
        if self.sampling == "first-c":
            return finished
        self._draws = 0
        return self._draw(group)

    def _rejoin_targets(self, group: GroupState, cid: int) -> list[int]:
        # Sampling: a client taken back waits for a draw instead of joining this round.
        return [cid] if self.sampling == "first-c" else []

    def _check_collect(self, now: float, group: GroupState) -> list[Decision]:
        # Every sampled client dropped out: draw again so the round can finish.
        if (
            self.sampling == "sample"
            and not group.collected
            and self._need(group) == 0
            and self._num_active(group) > 0
        ):
            self._draws += 1
            return self._send(group, self._draw(group))
        return super()._check_collect(now, group)

    def _draw(self, group: GroupState) -> list[int]:
        active = [c for c in group.members if self._is_active(c)]
        k = fraction_need(self.fraction, len(active))
        key = [self.seed, group.round] + ([self._draws] if self._draws else [])
        rng = np.random.default_rng(key)
        picks: np.ndarray | list[int] = rng.choice(len(active), size=k, replace=False) if k else []
        self._sampled = tuple(sorted(active[int(i)] for i in picks))
        return list(self._sampled)

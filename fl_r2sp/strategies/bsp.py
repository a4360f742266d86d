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
from typing import Any, Literal

import numpy as np

from fl_r2sp.strategies.aggregation import AggregationKind
from fl_r2sp.strategies.base import Decision
from fl_r2sp.strategies.flr2sp import FLR2SPPolicy
from fl_r2sp.strategies.groups import GroupState, fraction_need
from fl_r2sp.strategies.scoring import CosineReferenceKind

BspSamplingKind = Literal["first-c", "sample"]


class BSPPolicy(FLR2SPPolicy):
    """Bulk-synchronous FL (FedAvg-style) on top of :class:`FLR2SPPolicy` with M = 1.

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count).
    fraction : float, default 0.75
        C: fraction of the active clients aggregated (first-c) or sampled (sample).
    sampling : {"first-c", "sample"}, default "first-c"
        See the module docstring.
    seed : int, default 0
        Seed of the per-round client sample (``sample`` mode only).
    aggregation : {"mean", "weighted"}, default "mean"
        Unweighted mean (paper) or sample-weighted (FedAvg).
    outlier_filter, cosine_threshold, outlier_rounds, known_outliers, cosine_reference, \
score_stragglers, max_failures, outlier_warmup
        As in :class:`FLR2SPPolicy` (defaults True, 0.5, 3, empty, "group", False, 3, 0).
    """

    name = "bsp"

    def __init__(
        self,
        clients: int | Sequence[int],
        fraction: float = 0.75,
        sampling: BspSamplingKind = "first-c",
        seed: int = 0,
        aggregation: AggregationKind = "mean",
        outlier_filter: bool = True,
        cosine_threshold: float = 0.5,
        outlier_rounds: int = 3,
        known_outliers: frozenset[int] = frozenset(),
        cosine_reference: CosineReferenceKind = "group",
        score_stragglers: bool = False,
        max_failures: int = 3,
        outlier_warmup: int = 0,
    ) -> None:
        if sampling not in ("first-c", "sample"):
            raise ValueError(f"bsp sampling={sampling!r} is not one of 'first-c', 'sample'")
        super().__init__(
            clients, num_groups=1, fraction=fraction, gap_factor=0.0,
            aggregation=aggregation, outlier_filter=outlier_filter,
            cosine_threshold=cosine_threshold, outlier_rounds=outlier_rounds,
            known_outliers=known_outliers, cosine_reference=cosine_reference,
            score_stragglers=score_stragglers, max_failures=max_failures,
            outlier_warmup=outlier_warmup,
        )
        self.sampling: BspSamplingKind = sampling
        self.seed = int(seed)
        self._sampled: tuple[int, ...] = ()
        self._draws = 0  # redraws within one round (all sampled clients dropped)

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

    def _check_collect(self, now: float, group: GroupState) -> list[Decision]:
        # Every sampled client dropped out: draw again so the round can finish.
        if (self.sampling == "sample" and not group.collected and self._need(group) == 0
                and self._num_active(group) > 0):
            self._draws += 1
            return self._send(group, self._draw(group))
        return super()._check_collect(now, group)

    def _draw(self, group: GroupState) -> list[int]:
        active = [c for c in group.members if self._is_active(c)]
        k = fraction_need(self.fraction, len(active))
        key = [self.seed, group.round] + ([self._draws] if self._draws else [])
        rng = np.random.default_rng(key)
        picks = rng.choice(len(active), size=k, replace=False) if k else []
        self._sampled = tuple(sorted(active[int(i)] for i in picks))
        return list(self._sampled)

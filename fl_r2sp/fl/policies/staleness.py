"""Staleness functions s(t) of FedAsync (Xie et al., 2019), also used by FedBuff.

``t`` is the staleness of an update: the number of global model versions
applied between the version the client started from and the version it is
merged into (``t = 0`` for a fresh update). The definitions follow the
FedAsync paper, §5.2:

* ``constant``:   ``s(t) = 1``
* ``polynomial``: ``s(t) = (1 + t) ** (-a)``
* ``hinge``:      ``s(t) = 1`` if ``t <= b`` else ``1 / (a * (t - b) + 1)``

FedAsync mixes with ``alpha_t = alpha * s(t)``; FedBuff weights each buffered
delta by ``s(t)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fl_r2sp.fl.policies._records import keyed, require, require_choice

StalenessKind = Literal["constant", "polynomial", "hinge"]


@dataclass(frozen=True)
class StalenessFn:
    """A staleness function ``s(t)`` (call it with the staleness ``t``).

    Also the parameter record of the staleness knobs (run-config keys
    ``staleness``, ``staleness-a``, ``staleness-b``). The run's default function
    is :class:`~fl_r2sp.fl.policies.params.AsyncParams`' (polynomial); a bare
    ``StalenessFn()`` is the neutral constant one.

    Parameters
    ----------
    kind : {"constant", "polynomial", "hinge"}, default "constant"
        Which FedAsync function.
    a : float, default 0.5
        Exponent of ``polynomial``; slope of ``hinge``. Must be >= 0.
    b : float, default 4.0
        Staleness up to which ``hinge`` gives full weight. Must be >= 0.
    """

    kind: StalenessKind = keyed("constant", "staleness")
    a: float = keyed(0.5, "staleness-a")
    b: float = keyed(4.0, "staleness-b")

    def __post_init__(self) -> None:
        require_choice(self, "kind", StalenessKind)
        require(self, "a", self.a >= 0, "must be >= 0")
        require(self, "b", self.b >= 0, "must be >= 0")

    def __call__(self, staleness: int) -> float:
        """Weight in (0, 1] of an update that is ``staleness`` versions old.

        Raises
        ------
        ValueError
            If ``staleness`` is negative (a client cannot start from the future).
        """
        if staleness < 0:
            raise ValueError(f"staleness must be >= 0, got {staleness}")
        if self.kind == "constant":
            return 1.0
        if self.kind == "polynomial":
            return float((1.0 + staleness) ** (-self.a))
        if staleness <= self.b:
            return 1.0
        return 1.0 / (self.a * (staleness - self.b) + 1.0)

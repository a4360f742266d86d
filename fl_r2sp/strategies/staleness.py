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

StalenessKind = Literal["constant", "polynomial", "hinge"]


@dataclass(frozen=True)
class StalenessFn:
    """A staleness function ``s(t)`` (call it with the staleness ``t``).

    Parameters
    ----------
    kind : {"constant", "polynomial", "hinge"}, default "constant"
        Which FedAsync function.
    a : float, default 0.5
        Exponent of ``polynomial``; slope of ``hinge``. Must be >= 0.
    b : float, default 4.0
        Staleness up to which ``hinge`` gives full weight. Must be >= 0.
    """

    kind: StalenessKind = "constant"
    a: float = 0.5
    b: float = 4.0

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "polynomial", "hinge"):
            raise ValueError(
                f"staleness={self.kind!r} is not one of 'constant', 'polynomial', 'hinge'"
            )
        if self.a < 0:
            raise ValueError(f"staleness-a={self.a} must be >= 0")
        if self.b < 0:
            raise ValueError(f"staleness-b={self.b} must be >= 0")

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

"""Progress models for BPAWR: the probability that a training worker is ready within Δt.

The selective-reduce paper models the compute time T of one round by its CDF F (one
distribution shared by all workers, "approximately computed from the frequency of T observed in
the completed iterations"). For a worker ``t`` seconds into its round, Algorithm 2 uses
``F(t + Δt)`` (``hazard="paper"``; the paper's Eq. 4 claims that this is
``P(T <= t + Δt | T > t)``, which it is not); ``hazard="conditional"`` is the conditional
probability ``(F(t + Δt) − F(t)) / (1 − F(t))``, taken as 1 once ``F(t) = 1`` (the worker is
already slower than every observed round).

*Warm start*: the distribution is known in advance (``samples`` given). *Cold start*: only the
rounds observed so far (:meth:`observe`); with fewer than ``min_samples`` of them every
probability is 0 (the paper gives no rule; predicting from a handful of rounds would wait on
noise).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


class ProgressModel(Protocol):
    """What BPAWR asks about training workers."""

    def observe(self, compute_s: float) -> None:
        """Record one completed compute round (seconds)."""

    def probabilities(
        self, workers: NDArray[np.int64], elapsed: FloatArray, dt: float
    ) -> FloatArray:
        """Probability that each worker, ``elapsed`` seconds into its round, is ready within dt."""


class EmpiricalProgress:
    """Empirical-CDF progress model (warm or cold start, paper or conditional hazard).

    Parameters
    ----------
    samples : sequence of float, optional
        Known compute times (warm start). None: cold start.
    hazard : str, default "paper"
        "paper" (F(t + Δt)) or "conditional".
    min_samples : int, default 20
        Samples needed before any probability is non-zero (>= 1).
    learn : bool, default True
        Add observed rounds to the distribution (cold start needs it; a warm model may keep its
        prior fixed with False).

    Raises
    ------
    ValueError
        On an unknown hazard, min_samples < 1 or a negative / non-finite sample.
    """

    def __init__(
        self,
        samples: Sequence[float] | None = None,
        hazard: str = "paper",
        min_samples: int = 20,
        learn: bool = True,
    ) -> None:
        if hazard not in ("paper", "conditional"):
            raise ValueError(f"unknown hazard {hazard!r}; choose 'paper' or 'conditional'")
        if min_samples < 1:
            raise ValueError(f"min_samples must be >= 1, got {min_samples}")
        data = np.asarray([] if samples is None else samples, dtype=np.float64)
        _check_samples(data)
        self.hazard = hazard
        self.min_samples = min_samples
        self.learn = learn
        self._sorted: FloatArray = np.sort(data)
        self._pending: list[float] = []

    @property
    def count(self) -> int:
        """Number of samples the CDF is built from."""
        return int(self._sorted.size) + len(self._pending)

    def observe(self, compute_s: float) -> None:
        """Add one observed round (ignored with ``learn=False``)."""
        if not (np.isfinite(compute_s) and compute_s >= 0):
            raise ValueError(f"compute time must be finite and >= 0, got {compute_s!r}")
        if self.learn:
            self._pending.append(float(compute_s))

    def cdf(self, t: FloatArray) -> FloatArray:
        """Empirical F(t) = share of samples <= t (0 with no sample)."""
        data = self._data()
        if data.size == 0:
            return np.zeros(np.shape(t))
        return np.searchsorted(data, t, side="right") / data.size

    def probabilities(
        self, workers: NDArray[np.int64], elapsed: FloatArray, dt: float
    ) -> FloatArray:
        """See :class:`ProgressModel`; zeros below ``min_samples``."""
        if self.count < self.min_samples:
            return np.zeros(np.shape(elapsed))
        ahead = self.cdf(elapsed + dt)
        if self.hazard == "paper":
            return ahead
        now = self.cdf(elapsed)
        left = 1.0 - now
        safe = np.where(left > 0, left, 1.0)
        return np.where(left > 0, (ahead - now) / safe, 1.0)

    def _data(self) -> FloatArray:
        if self._pending:
            self._sorted = np.sort(np.concatenate([self._sorted, np.asarray(self._pending)]))
            self._pending = []
        return self._sorted


def _check_samples(data: FloatArray) -> None:
    if data.ndim != 1 or not np.all(np.isfinite(data)) or np.any(data < 0):
        raise ValueError("compute-time samples must be a flat sequence of finite seconds >= 0")

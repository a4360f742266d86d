"""Workloads of the selective-reduce simulations: compute-time traces and bandwidth draws.

**Compute time per round.** The paper draws it from two traces of the Eager-SGD paper (a "CNN
trace": ResNet-50 / ImageNet on a cloud instance, imbalance from cloud performance variability;
a "Transformer trace": Transformer / WMT16, imbalance from variable sentence lengths). Both exist
only as CDF figures, which we do not have; these are **synthetic proxies with the documented
shapes, not digitised data**, fixed before any result was seen:

* ``"cnn"``: narrow around a mode with a rare slow tail,
  ``T = 0.30 s · LogNormal(0, 0.05) + B · Exp(mean 0.2 s)``, B ~ Bernoulli(0.08)
  (mean ≈ 0.316 s);
* ``"transformer"``: broad and right-skewed, ``T = 0.08 s + Gamma(shape 2.5, scale 0.09 s)``
  (mean 0.305 s, std 0.142 s).

Every draw is i.i.d. per worker and round (the paper does not say otherwise). A measured trace
can replace the proxies: :func:`load_trace_csv` reads one column of seconds, and
:class:`ComputeModel` resamples it uniformly.

**Bandwidth.** Each worker's b_i (uplink = downlink) is ``round(20u, 3)`` Gbps with
u ~ U[λ, 1] (λ = 0.05 gives 1 to 20 Gbps), fixed per trial. The controller may see an estimate
``b(1 + e·x)``, x ~ U[−1, 1] (the paper's estimation error e).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

#: Names of the synthetic trace proxies.
TRACES: tuple[str, ...] = ("cnn", "transformer")
GBPS = 1e9 / 8  # bytes/s per Gbit/s


class ComputeModel:
    """Per-round compute-time distribution: a trace proxy or a measured sample.

    Parameters
    ----------
    trace : str, default "transformer"
        One of :data:`TRACES`; ignored when ``samples`` are given.
    samples : sequence of float, optional
        Measured compute times (seconds, >= 0) to resample uniformly.

    Raises
    ------
    ValueError
        On an unknown trace or bad samples.
    """

    def __init__(self, trace: str = "transformer", samples: Sequence[float] | None = None) -> None:
        if samples is None and trace not in TRACES:
            raise ValueError(f"unknown trace {trace!r}; choose one of {', '.join(TRACES)}")
        data = None if samples is None else np.asarray(samples, dtype=np.float64)
        if data is not None and (
            data.ndim != 1 or data.size == 0 or not np.all(np.isfinite(data)) or np.any(data < 0)
        ):
            raise ValueError("trace samples must be a non-empty flat sequence of seconds >= 0")
        self.trace = "csv" if data is not None else trace
        self.samples = data

    def draw(self, rng: np.random.Generator, size: int) -> NDArray[np.float64]:
        """``size`` compute times (seconds) from ``rng``."""
        if self.samples is not None:
            return self.samples[rng.integers(0, self.samples.size, size)]
        if self.trace == "cnn":
            base = 0.30 * rng.lognormal(0.0, 0.05, size)
            slow = rng.random(size) < 0.08
            return base + slow * rng.exponential(0.2, size)
        return 0.08 + rng.gamma(2.5, 0.09, size)


def load_trace_csv(path: str | Path, column: str | None = None) -> tuple[float, ...]:
    """Compute times (seconds) from a CSV: the named column, or the first column.

    A header row is detected by a non-numeric first cell.

    Raises
    ------
    ValueError
        On a missing column, a non-numeric or negative value, or no rows.
    """
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"{path}: no rows")
    idx, body = 0, rows
    if not _is_number(rows[0][0]):
        header = [c.strip() for c in rows[0]]
        if column is not None and column not in header:
            raise ValueError(f"{path}: no column {column!r}; columns are {header}")
        idx, body = (header.index(column) if column is not None else 0), rows[1:]
    elif column is not None:
        raise ValueError(f"{path}: no header row, so there is no column {column!r}")
    try:
        values = tuple(float(r[idx]) for r in body)
    except (ValueError, IndexError) as err:
        raise ValueError(f"{path}: a row has no numeric value in column {idx}: {err}") from None
    if not values or min(values) < 0:
        raise ValueError(f"{path}: compute times must be seconds >= 0 (at least one row)")
    return values


def draw_bandwidths_gbps(
    n: int, lam: float, rng: np.random.Generator, max_gbps: float = 20.0
) -> NDArray[np.float64]:
    """Per-worker bandwidth ``round(max_gbps · u, 3)`` Gbps, u ~ U[λ, 1].

    Raises
    ------
    ValueError
        On n < 1, λ outside (0, 1] or a non-positive maximum.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0.0 < lam <= 1.0:
        raise ValueError(f"lambda must lie in (0, 1], got {lam!r}")
    if not max_gbps > 0:
        raise ValueError(f"max_gbps must be > 0, got {max_gbps!r}")
    gbps = np.round(max_gbps * rng.uniform(lam, 1.0, n), 3)
    return np.maximum(gbps, 0.001)  # round() may reach 0 only for λ·max_gbps < 5e-4


def estimate_bandwidths(
    true_bw: NDArray[np.float64], error: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """The controller's view ``b(1 + e·x)``, x ~ U[−1, 1] (``error`` e in [0, 1))."""
    if not 0.0 <= error < 1.0:
        raise ValueError(f"bandwidth error e must lie in [0, 1), got {error!r}")
    if error == 0.0:
        return true_bw.copy()
    return true_bw * (1.0 + error * rng.uniform(-1.0, 1.0, true_bw.size))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True

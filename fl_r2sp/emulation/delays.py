"""Injected client delay distributions (seconds), built from a spec string.

Specs (parameters in any order; defaults in brackets):

* ``lognormal(mu=-2,sigma=1)`` [mu=-2, sigma=1] — the paper's default;
  mean ``exp(mu + sigma^2/2)`` = 0.223 s.
* ``exponential(mean=0.2)`` [mean required, > 0].
* ``normal(mu=0.2,sigma=0.1,low=0,high=1)`` — normal truncated to
  ``[low, high]`` [low=0, high=inf]; ``low`` must be >= 0 (a delay is never negative).
* ``pareto(shape=2.5,scale=0.1)`` — Pareto type I, minimum ``scale``
  (mean infinite if ``shape <= 1``).
* ``constant(value=0.1)``; ``none`` = ``constant(value=0)``.
* ``trace(path=file.csv)`` — replay, see :class:`TraceDelay`.

Every draw of :meth:`DelayModel.sample_for` uses ``rng_for(seed,
STREAM_DELAY, cid, job)``, so a client's delay in a given job never depends on
event order.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from ._csv import read_numeric_csv
from ._spec import Params, parse_spec
from .rng import STREAM_DELAY, rng_for

_STD = NormalDist()


class DelayModel(ABC):
    """A distribution of non-negative delays in seconds."""

    spec: str = ""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> float:
        """One draw using ``rng``."""

    @abstractmethod
    def mean(self) -> float:
        """Closed-form mean (``inf`` if it does not exist)."""

    @abstractmethod
    def quantile(self, q: float) -> float:
        """Closed-form ``q``-quantile, ``0 <= q < 1``."""

    def sample_for(self, seed: int, cid: int, job: int) -> float:
        """Delay of client ``cid`` in job (round) ``job`` under run ``seed``."""
        return self.sample(rng_for(seed, STREAM_DELAY, cid, job))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class LogNormalDelay(DelayModel):
    """``exp(N(mu, sigma^2))``."""

    def __init__(self, mu: float = -2.0, sigma: float = 1.0) -> None:
        self.mu, self.sigma = mu, sigma

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.lognormal(self.mu, self.sigma))

    def mean(self) -> float:
        return math.exp(self.mu + self.sigma**2 / 2)

    def quantile(self, q: float) -> float:
        return math.exp(self.mu + self.sigma * _STD.inv_cdf(q)) if q > 0 else 0.0


class ExponentialDelay(DelayModel):
    """Exponential with the given mean."""

    def __init__(self, mean: float) -> None:
        self._mean = mean

    def sample(self, rng: np.random.Generator) -> float:
        return float(rng.exponential(self._mean))

    def mean(self) -> float:
        return self._mean

    def quantile(self, q: float) -> float:
        return -self._mean * math.log1p(-q)


class TruncatedNormalDelay(DelayModel):
    """``N(mu, sigma^2)`` conditioned on ``[low, high]``, sampled by inverse CDF."""

    def __init__(self, mu: float, sigma: float, low: float = 0.0, high: float = math.inf) -> None:
        self.mu, self.sigma, self.low, self.high = mu, sigma, low, high
        self._a = _STD.cdf((low - mu) / sigma)
        self._b = _STD.cdf((high - mu) / sigma) if math.isfinite(high) else 1.0
        if not self._b > self._a:
            raise ValueError(
                f"normal(mu={mu},sigma={sigma}) has no mass in [{low}, {high}]; widen the bounds"
            )

    def quantile(self, q: float) -> float:
        u = min(max(self._a + q * (self._b - self._a), 1e-300), 1 - 1e-16)
        return min(max(self.mu + self.sigma * _STD.inv_cdf(u), self.low), self.high)

    def sample(self, rng: np.random.Generator) -> float:
        return self.quantile(float(rng.random()))

    def mean(self) -> float:
        alpha, beta = (self.low - self.mu) / self.sigma, (self.high - self.mu) / self.sigma
        pdf_b = _STD.pdf(beta) if math.isfinite(beta) else 0.0
        return self.mu + self.sigma * (_STD.pdf(alpha) - pdf_b) / (self._b - self._a)


class ParetoDelay(DelayModel):
    """Pareto type I: ``scale * U^(-1/shape)``, support ``[scale, inf)``."""

    def __init__(self, shape: float, scale: float) -> None:
        self.shape, self.scale = shape, scale

    def sample(self, rng: np.random.Generator) -> float:
        return self.quantile(float(rng.random()))

    def mean(self) -> float:
        return self.shape * self.scale / (self.shape - 1) if self.shape > 1 else math.inf

    def quantile(self, q: float) -> float:
        # float ** float is typed Any (it may be complex); here the base is >= 0.
        return float(self.scale * (1.0 - q) ** (-1.0 / self.shape))


class ConstantDelay(DelayModel):
    """Always ``value``."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value

    def sample(self, rng: np.random.Generator) -> float:
        return self.value

    def mean(self) -> float:
        return self.value

    def quantile(self, q: float) -> float:
        return self.value


class TraceDelay(DelayModel):
    """Replay of recorded delays from a CSV file.

    Layouts: header ``client,round,delay`` (any order), or a single column of
    delays (header ``delay`` or none). :meth:`sample_for` returns, in order of
    preference: the row for exactly ``(cid, job)``; else that client's delays
    in round order, cycled, at index ``job``; else all delays in file order,
    cycled, at index ``cid + job``. :meth:`sample` draws a recorded delay
    uniformly (bootstrap); :meth:`mean` and :meth:`quantile` are empirical.
    """

    def __init__(self, path: str) -> None:
        names, values = read_numeric_csv(path, ("delay", "client", "round"))
        if "delay" not in names:
            raise ValueError(f"delay trace {path!r} needs a 'delay' column, found {list(names)}")
        col = {name: values[:, i] for i, name in enumerate(names)}
        self.delays = col["delay"]
        if (self.delays < 0).any() or not np.isfinite(self.delays).all():
            raise ValueError(f"delay trace {path!r} has negative or non-finite delays")
        self._exact: dict[tuple[int, int], float] = {}
        self._per_client: dict[int, np.ndarray] = {}
        if "client" in col and "round" in col:
            order = np.lexsort((col["round"], col["client"]))
            for c, r, d in zip(
                col["client"][order], col["round"][order], self.delays[order], strict=True
            ):
                self._exact[(int(c), int(r))] = float(d)
            for c in np.unique(col["client"]):
                self._per_client[int(c)] = self.delays[order][col["client"][order] == c]

    def sample_for(self, seed: int, cid: int, job: int) -> float:
        if (cid, job) in self._exact:
            return self._exact[(cid, job)]
        if cid in self._per_client:
            seq = self._per_client[cid]
            return float(seq[job % seq.size])
        return float(self.delays[(cid + job) % self.delays.size])

    def sample(self, rng: np.random.Generator) -> float:
        return float(self.delays[rng.integers(self.delays.size)])

    def mean(self) -> float:
        return float(self.delays.mean())

    def quantile(self, q: float) -> float:
        return float(np.quantile(self.delays, q))


def make_delay(spec: str) -> DelayModel:
    """Build a delay model from ``spec`` (see the module docstring).

    Raises
    ------
    ValueError
        Unknown name, unknown or invalid parameter, malformed trace file.
    FileNotFoundError
        Missing trace file.
    """
    name, raw = parse_spec(spec, "delay")
    builders: dict[str, tuple[tuple[str, ...], Callable[[Params], DelayModel]]] = {
        "lognormal": (
            ("mu", "sigma"),
            lambda p: LogNormalDelay(p.num("mu", -2.0), p.num("sigma", 1.0, 0.0)),
        ),
        "exponential": (("mean",), lambda p: ExponentialDelay(p.num("mean", low=0.0, strict=True))),
        "normal": (
            ("mu", "sigma", "low", "high"),
            lambda p: TruncatedNormalDelay(
                p.num("mu"),
                p.num("sigma", low=0.0, strict=True),
                p.num("low", 0.0, 0.0),
                p.num("high", math.inf),
            ),
        ),
        "pareto": (
            ("shape", "scale"),
            lambda p: ParetoDelay(
                p.num("shape", low=0.0, strict=True), p.num("scale", low=0.0, strict=True)
            ),
        ),
        "constant": (("value",), lambda p: ConstantDelay(p.num("value", low=0.0))),
        "none": ((), lambda p: ConstantDelay(0.0)),
        "trace": (("path",), lambda p: TraceDelay(p.text("path"))),
    }
    if name not in builders:
        raise ValueError(
            f"unknown delay distribution {name!r} in {spec!r}; choose one of {sorted(builders)}"
        )
    allowed, build = builders[name]
    model = build(Params(spec, raw, allowed))
    model.spec = spec
    return model

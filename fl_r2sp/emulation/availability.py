"""Client availability: when a client goes offline during a job, and when it is back.

Specs:

* ``none`` — always online.
* ``bernoulli(p=0.05,down=30)`` — each job independently, with probability
  ``p`` [required, in [0, 1]], the client goes offline at a uniform time within
  the job's active interval and comes back after an exponential time of mean
  ``down`` seconds [default 30, > 0].
* ``trace(path=file.csv)`` — rows ``client,offline_start,offline_end``
  (header optional, virtual seconds, end > start); a job is interrupted by the
  first offline interval overlapping it.

Draws use ``rng_for(seed, STREAM_DROPOUT, cid, job)`` and always consume the
same numbers, so the outcome depends only on (seed, client, job, interval).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ._csv import read_numeric_csv
from ._spec import Params, parse_spec
from .rng import STREAM_DROPOUT, rng_for


class AvailabilityModel(ABC):
    """Decides whether a job is interrupted by the client going offline."""

    @abstractmethod
    def interruption(
        self, seed: int, cid: int, job: int, start: float, end: float
    ) -> tuple[float, float] | None:
        """``(t_off, t_back)`` if client ``cid`` goes offline in ``[start, end]``, else ``None``."""


class AlwaysOnline(AvailabilityModel):
    """No client ever goes offline."""

    def interruption(self, seed: int, cid: int, job: int, start: float, end: float) -> None:
        return None


class BernoulliDropout(AvailabilityModel):
    """Offline with probability ``p`` per job, for an exponential time of mean ``down``."""

    def __init__(self, p: float, down: float = 30.0) -> None:
        self.p, self.down = p, down

    def interruption(
        self, seed: int, cid: int, job: int, start: float, end: float
    ) -> tuple[float, float] | None:
        rng = rng_for(seed, STREAM_DROPOUT, cid, job)
        u, where, gone = rng.random(), rng.random(), rng.exponential(self.down)
        if u >= self.p:
            return None
        t_off = start + where * max(end - start, 0.0)
        return float(t_off), float(t_off + gone)


class TraceAvailability(AvailabilityModel):
    """Offline intervals per client read from a CSV file."""

    def __init__(self, path: str) -> None:
        names, values = read_numeric_csv(path, ("client", "offline_start", "offline_end"))
        if set(names) != {"client", "offline_start", "offline_end"}:
            raise ValueError(
                f"availability trace {path!r} needs columns client,offline_start,offline_end; "
                f"got {list(names)}"
            )
        col = {name: values[:, i] for i, name in enumerate(names)}
        if (col["offline_end"] <= col["offline_start"]).any():
            bad = int(np.argmax(col["offline_end"] <= col["offline_start"]))
            raise ValueError(
                f"availability trace {path!r}: data row {bad + 1} has offline_end <= offline_start"
            )
        self._by_client: dict[int, np.ndarray] = {}
        for c in np.unique(col["client"]):
            rows = col["client"] == c
            spans = np.column_stack([col["offline_start"][rows], col["offline_end"][rows]])
            self._by_client[int(c)] = spans[np.argsort(spans[:, 0], kind="stable")]

    def interruption(
        self, seed: int, cid: int, job: int, start: float, end: float
    ) -> tuple[float, float] | None:
        spans = self._by_client.get(cid)
        if spans is None:
            return None
        hit = (spans[:, 0] <= end) & (spans[:, 1] > start)
        if not hit.any():
            return None
        off, back = spans[int(np.argmax(hit))]
        return float(max(off, start)), float(back)


def make_availability(spec: str) -> AvailabilityModel:
    """Build an availability model from ``spec`` (see the module docstring).

    Raises
    ------
    ValueError
        Unknown name, bad parameters or malformed trace.
    FileNotFoundError
        Missing trace file.
    """
    name, raw = parse_spec(spec, "availability")
    if name == "none":
        Params(spec, raw, ())
        return AlwaysOnline()
    if name == "bernoulli":
        p = Params(spec, raw, ("p", "down"))
        prob = p.num("p", low=0.0)
        if prob > 1:
            raise ValueError(f"parameter p={prob} in {spec!r} must be a probability in [0, 1]")
        return BernoulliDropout(prob, p.num("down", 30.0, 0.0, strict=True))
    if name == "trace":
        return TraceAvailability(Params(spec, raw, ("path",)).text("path"))
    raise ValueError(
        f"unknown availability model {name!r} in {spec!r}; "
        "choose none, bernoulli(p=...,down=...) or trace(path=...)"
    )

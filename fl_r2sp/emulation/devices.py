"""Per-client device speed: seconds per local iteration, deterministic per (seed, client).

Specs (``base`` = the profile's seconds per iteration for the model):

* ``profile`` or ``homogeneous`` — every client takes ``base``.
* ``lognormal(sigma=0.5)`` — ``base x exp(sigma x Z)``, Z standard normal:
  a multiplier with median 1 [sigma=0.5, >= 0].
* ``profiles(fast=0.5:0.25,slow=2:0.25)`` — named tiers ``name=multiplier:share``;
  a client falls in a tier with probability ``share``; shares must sum to at
  most 1 and the remainder gets multiplier 1 (tier ``default``).

Draws come from ``rng_for(seed, STREAM_DEVICE, cid)``: a client keeps its
speed for the whole run and it does not depend on how many clients exist.

Every spec also takes ``jitter`` (default 0, off): a per-job slowdown on top
of the client's speed, ``1 + jitter x E`` with E ~ Exponential(1) drawn from
``rng_for(seed, STREAM_JITTER, cid, job)``, e.g. ``profile(jitter=0.2)``
(mean slowdown 1.2, 5% of jobs above 1.6). It models device instability
(background load, CPU credits running out), which the per-client speed
alone cannot. It only ever slows a job down, so the per-client speed stays
a valid lower bound of every job's compute time, which the virtual-time loop's
conservative rule relies on (``docs/architecture.md`` §4). With ``jitter=0``
no draw is made and results are bit-identical to a spec without it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ._spec import Params, parse_spec
from .rng import STREAM_DEVICE, STREAM_JITTER, rng_for


class DeviceModel(ABC):
    """Maps ``(seed, client)`` to seconds per local iteration, and a job to its slowdown.

    Parameters
    ----------
    base_seconds_per_iteration : float
        The profile's seconds per iteration (> 0).
    jitter : float, default 0.0
        Per-job slowdown scale (>= 0; see the module doc); 0 = off.
    """

    def __init__(self, base_seconds_per_iteration: float, jitter: float = 0.0) -> None:
        if not base_seconds_per_iteration > 0:
            raise ValueError(
                f"base seconds per iteration must be > 0, got {base_seconds_per_iteration!r}"
            )
        if not jitter >= 0:
            raise ValueError(f"device jitter must be >= 0, got {jitter!r}")
        self.base = float(base_seconds_per_iteration)
        self.jitter = float(jitter)

    @abstractmethod
    def multiplier(self, seed: int, cid: int) -> float:
        """Client ``cid``'s slowdown factor relative to the base speed."""

    def seconds_per_iteration(self, seed: int, cid: int) -> float:
        """Seconds one local iteration takes on client ``cid`` (a lower bound of any job's)."""
        return self.base * self.multiplier(seed, cid)

    def job_multiplier(self, seed: int, cid: int, job: int) -> float:
        """Slowdown of client ``cid``'s job ``job``: ``1 + jitter x E`` (1.0 when off)."""
        if self.jitter == 0.0:
            return 1.0
        return 1.0 + self.jitter * float(rng_for(seed, STREAM_JITTER, cid, job).exponential())


class HomogeneousDevices(DeviceModel):
    """Every client runs at the base speed."""

    def multiplier(self, seed: int, cid: int) -> float:
        return 1.0


class LogNormalDevices(DeviceModel):
    """Multiplier ``exp(sigma x Z)`` (median 1)."""

    def __init__(
        self, base_seconds_per_iteration: float, sigma: float = 0.5, jitter: float = 0.0
    ) -> None:
        super().__init__(base_seconds_per_iteration, jitter)
        self.sigma = sigma

    def multiplier(self, seed: int, cid: int) -> float:
        return float(np.exp(self.sigma * rng_for(seed, STREAM_DEVICE, cid).standard_normal()))


class TieredDevices(DeviceModel):
    """Named tiers ``{name: (multiplier, share)}``; the rest is tier ``default`` (x1)."""

    def __init__(
        self,
        base_seconds_per_iteration: float,
        tiers: dict[str, tuple[float, float]],
        jitter: float = 0.0,
    ) -> None:
        super().__init__(base_seconds_per_iteration, jitter)
        total = sum(share for _, share in tiers.values())
        if total > 1 + 1e-12:
            raise ValueError(f"device tier shares sum to {total:.4g} > 1; lower them")
        self.tiers = dict(tiers)
        self._names = list(tiers) + ["default"]
        self._mults = np.array([m for m, _ in tiers.values()] + [1.0])
        self._cum = np.cumsum([s for _, s in tiers.values()])

    def tier(self, seed: int, cid: int) -> str:
        """Name of client ``cid``'s tier."""
        u = rng_for(seed, STREAM_DEVICE, cid).random()
        return self._names[int(np.searchsorted(self._cum, u, side="right"))]

    def multiplier(self, seed: int, cid: int) -> float:
        return float(self._mults[self._names.index(self.tier(seed, cid))])


def _parse_tiers(spec: str, raw: dict[str, str]) -> dict[str, tuple[float, float]]:
    tiers: dict[str, tuple[float, float]] = {}
    for name, value in raw.items():
        mult, sep, share = value.partition(":")
        try:
            m, s = float(mult), float(share)
        except ValueError:
            m = s = float("nan")
        if not sep or not m > 0 or not 0 <= s <= 1:
            raise ValueError(
                f"tier {name}={value!r} in {spec!r}: use name=multiplier:share with "
                "multiplier > 0 and 0 <= share <= 1, e.g. fast=0.5:0.25"
            )
        tiers[name] = (m, s)
    if not tiers:
        raise ValueError(f"{spec!r} lists no tier; e.g. profiles(fast=0.5:0.25,slow=2:0.25)")
    return tiers


def make_device_model(spec: str, base_seconds_per_iteration: float) -> DeviceModel:
    """Build a device-speed model from ``spec`` (see the module docstring).

    Raises
    ------
    ValueError
        Unknown name, bad parameters, or a non-positive base speed.
    """
    name, raw = parse_spec(spec, "device")
    # ``jitter`` is common to every spec (and cannot be a tier name of ``profiles``).
    jitter = Params(spec, {k: v for k, v in raw.items() if k == "jitter"}, ("jitter",)).num(
        "jitter", 0.0, 0.0
    )
    raw = {k: v for k, v in raw.items() if k != "jitter"}
    if name in ("profile", "homogeneous"):
        Params(spec, raw, ())
        return HomogeneousDevices(base_seconds_per_iteration, jitter)
    if name == "lognormal":
        sigma = Params(spec, raw, ("sigma",)).num("sigma", 0.5, 0.0)
        return LogNormalDevices(base_seconds_per_iteration, sigma, jitter)
    if name == "profiles":
        return TieredDevices(base_seconds_per_iteration, _parse_tiers(spec, raw), jitter)
    raise ValueError(
        f"unknown device model {name!r} in {spec!r}; choose profile, homogeneous, "
        "lognormal(sigma=...) or profiles(name=multiplier:share,...), each with optional jitter=..."
    )

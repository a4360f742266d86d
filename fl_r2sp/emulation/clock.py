"""Clocks: virtual time for emulation, wall time for deployments.

Only :class:`WallClock` reads the host clock; everything else in
:mod:`fl_r2sp.emulation` is driven by :class:`VirtualClock`.
"""

from __future__ import annotations

import math
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Anything that tells the current time in seconds."""

    def now(self) -> float:
        """Current time in seconds."""
        ...


class VirtualClock:
    """Monotone virtual clock advanced explicitly by the run loop.

    Parameters
    ----------
    start : float, default 0.0
        Initial time in virtual seconds.
    """

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start):
            raise ValueError(f"clock start must be finite, got {start!r}")
        self._now = float(start)

    def now(self) -> float:
        """Current virtual time."""
        return self._now

    def advance_to(self, t: float) -> None:
        """Move the clock forward to ``t``.

        Raises
        ------
        ValueError
            If ``t`` is earlier than :meth:`now` (time never goes back) or not finite.
        """
        if not math.isfinite(t):
            raise ValueError(f"cannot advance the clock to non-finite time {t!r}")
        if t < self._now:
            raise ValueError(
                f"cannot move virtual time back from {self._now!r} to {t!r}; "
                "events must be processed in time order"
            )
        self._now = float(t)


class WallClock:
    """Real elapsed time since construction (``time.monotonic``), plus ``start``.

    Parameters
    ----------
    start : float, default 0.0
        Reading at construction (a resumed run continues its clock from here).
    """

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start):
            raise ValueError(f"clock start must be finite, got {start!r}")
        self._origin = time.monotonic() - float(start)

    def now(self) -> float:
        """Seconds elapsed since this clock was created."""
        return time.monotonic() - self._origin

    def sleep_until(self, t: float) -> None:
        """Block until :meth:`now` reaches ``t`` (returns at once if already past)."""
        remaining = t - self.now()
        if remaining > 0:
            time.sleep(remaining)

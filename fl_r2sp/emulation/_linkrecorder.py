"""History of the aggregate rate on selected links, for byte traces."""

from __future__ import annotations

import numpy as np


class LinkRecorder:
    """Keeps, for each watched link index, the times its aggregate rate changed."""

    def __init__(self) -> None:
        self._watched: list[int] = []
        self._times: list[float] = []
        self._loads: list[np.ndarray] = []

    def watch(self, link: int) -> None:
        """Start recording ``link`` (history before this call counts as zero)."""
        self._watched.append(link)
        self._loads = [np.append(row, 0.0) for row in self._loads]

    def observe(self, t: float, links: np.ndarray, rate: np.ndarray) -> None:
        """Record the per-link load implied by ``rate`` (called after each recompute)."""
        if not self._watched:
            return
        width = links.shape[1]
        per_link = np.bincount(
            links.ravel(), weights=np.repeat(rate, width), minlength=max(self._watched) + 1
        )
        self.observe_loads(t, per_link[self._watched])

    def observe_loads(self, t: float, load: np.ndarray) -> None:
        """Record the aggregate rates of the watched links (in :meth:`watch` order) from ``t``."""
        if self._times and self._times[-1] == t:
            self._loads[-1] = load  # several changes at one instant: the last one holds
        elif not self._loads or not np.array_equal(self._loads[-1], load):
            self._times.append(t)
            self._loads.append(load)

    def trace(
        self, link: int, interval: float, until: float, name: str, now: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bytes per bin ``[k*interval, (k+1)*interval)`` up to ``until``."""
        if link not in self._watched:
            raise ValueError(
                f"link {name!r} was not recorded; create the Network with record=True "
                f"or record=[{name!r}, ...]"
            )
        col = self._watched.index(link)
        times = np.asarray(self._times + [max(now, until)], dtype=float)
        rates = np.asarray([row[col] for row in self._loads], dtype=float)
        # Cumulative bytes is piecewise linear between change times: integrate exactly.
        cum = np.concatenate(([0.0], np.cumsum(rates * np.diff(times))))
        edges = np.arange(0.0, until + interval * 0.5, interval)
        if edges[-1] < until:
            edges = np.append(edges, until)
        # Bytes after the network's current time are not known yet: clip there.
        at_edges = np.interp(np.minimum(edges, now), times, cum, left=0.0)
        return edges[:-1], np.diff(at_edges)

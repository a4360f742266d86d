"""Flow-level ring all-reduce on :mod:`fl_r2sp.emulation` (per-worker up/down links, max-min fair).

A group of m members runs 2(m − 1) steps; in each, member ``g[j]`` sends a chunk of v/m to
``g[j + 1]`` over the links ``w{g[j]}-up`` and ``w{g[j+1]}-down`` (each flow first pays the
latency α as its overhead); the next step starts when the step's last flow has arrived. Groups
are disjoint and every link carries one flow of one ring per step, so on a static network each
step takes α + (v/m) / min b and the ring matches the analytic formula; the flow mode is there
for fidelity to the paper's "fair sharing" simulator and for networks where links are shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fl_r2sp.emulation import Network


@dataclass
class _Ring:
    members: tuple[int, ...]
    chunk: float
    step: int = 0
    flows: set[int] = field(default_factory=set)


class FlowRings:
    """Ring all-reduces of disjoint groups over one :class:`Network`.

    Parameters
    ----------
    bandwidth : sequence of float
        Per-worker link capacity in bytes/s (uplink = downlink).
    model_bytes : float
        v in bytes.
    alpha : float
        Per-step latency in seconds (each flow's overhead).
    """

    def __init__(self, bandwidth: Sequence[float], model_bytes: float, alpha: float) -> None:
        self.net = Network(keep_finished=False)
        for i, b in enumerate(bandwidth):
            self.net.add_link(f"w{i}-up", float(b))
            self.net.add_link(f"w{i}-down", float(b))
        self.model_bytes = model_bytes
        self.alpha = alpha
        self.rings: dict[int, _Ring] = {}
        self.owner: dict[int, int] = {}

    def start(self, group: int, members: Sequence[int], now: float) -> bool:
        """Start ``group``'s ring at ``now``; True if it is already done (one member)."""
        if len(members) <= 1:
            return True
        ring = _Ring(tuple(members), self.model_bytes / len(members))
        self.rings[group] = ring
        self._step(group, ring, now)
        return False

    def next_time(self) -> float | None:
        """Time of the next flow completion (None: nothing in flight)."""
        nxt = self.net.next_completion()
        return None if nxt is None else nxt[0]

    def advance(self, to: float) -> list[tuple[int, float]]:
        """Move the network to ``to``; return ``(group, end)`` of the rings that finished."""
        done = []
        for fid, end in self.net.advance(to):
            group = self.owner.pop(fid)
            ring = self.rings[group]
            ring.flows.discard(fid)
            if ring.flows:
                continue
            ring.step += 1
            if ring.step == 2 * (len(ring.members) - 1):
                del self.rings[group]
                done.append((group, end))
            else:  # ``to`` is the caller's next completion time, so end == to here
                self._step(group, ring, to)
        return done

    def _step(self, group: int, ring: _Ring, now: float) -> None:
        m = ring.members
        for j, src in enumerate(m):
            dst = m[(j + 1) % len(m)]
            links = (f"w{src}-up", f"w{dst}-down")
            fid = self.net.start_flow(now, ring.chunk, links, self.alpha, tag=group)
            ring.flows.add(fid)
            self.owner[fid] = group

"""Flow-level twin of DS-Sync and its baselines: communication time per iteration in racks.

Network (:mod:`fl_r2sp.emulation`, links shared max-min fairly): every host has a NIC uplink
and downlink (``h{i}-up``/``h{i}-down``, ``nic_gbps``); every rack an uplink to the spine and a
downlink from it (``r{c}-up``/``r{c}-down``, ``uplink_gbps``). A flow from host a to host b
crosses ``a-up``, then ``r(a)-up`` and ``r(b)-down`` if the racks differ, then ``b-down``. Each
flow pays the latency ``alpha_s`` before its bytes move.

Communication of one iteration (all workers start it together: compute time does not enter):

* a ring all-reduce of m members: 2(m − 1) steps, each a flow of S/m from every member to the
  next; a step starts when the previous one has fully arrived;
* all-reduce BSP: one ring of all workers in rank order (rack-aligned: two uplink crossings);
* DS-Sync: the step's groups' rings in parallel; the iteration ends with the slowest group;
* hierarchical all-reduce, as Table II of the paper counts it: intra-rack reduce-scatter
  (m − 1 steps of S/m), then a ring all-reduce of the full model among the rack leaders, then
  intra-rack all-gather, in sequence;
* gossip (exponential graph): every worker sends its whole model to ``i + 2^k`` at once.

Background traffic (the paper's S1/S2 "BERT on two workers of 2 racks") is two persistent flows
between two background hosts, one each way, that never finish; a background host may share a
worker's NIC (S1's end-host contention).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from fl_r2sp.cluster.policies.dssync.baselines import gossip_edges, gossip_period
from fl_r2sp.cluster.policies.dssync.patterns import Group, Pattern, init_groups
from fl_r2sp.cluster.policies.dssync.regroup import Bottlenecks, DSSyncParams, regroup
from fl_r2sp.emulation import Network

GBPS = 1e9 / 8  # bytes/s per Gb/s
_FOREVER = 1e18  # bytes of a background flow: never finishes within an iteration


@dataclass(frozen=True)
class RackNet:
    """Hosts, racks and link speeds.

    Parameters
    ----------
    racks : tuple of tuple of int
        Worker ranks per rack.
    hosts_per_rack : tuple of int
        Physical hosts per rack (workers plus background-only or idle hosts; sets the
        aggregate uplink under oversubscription).
    nic_gbps : float, default 20.0
        Every NIC, each direction.
    oversubscription : float, default 1.0
        Rack host capacity over uplink capacity.
    uplink_gbps : float or None, default None
        Explicit rack uplink capacity (each direction); None: hosts × NIC / oversubscription.
    background : tuple of (int, int), default ()
        ``(rack, host)`` of each background worker; ``host`` is a worker rank when the
        background worker shares that worker's NIC, or -1 for a host of its own.
    alpha_s : float, default 1e-4
        Latency per flow in seconds.
    """

    racks: tuple[tuple[int, ...], ...]
    hosts_per_rack: tuple[int, ...]
    nic_gbps: float = 20.0
    oversubscription: float = 1.0
    uplink_gbps: float | None = None
    background: tuple[tuple[int, int], ...] = ()
    alpha_s: float = 1e-4
    rack_of: dict[int, int] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.hosts_per_rack) != len(self.racks):
            raise ValueError("hosts_per_rack needs one entry per rack")
        if any(h < len(r) for h, r in zip(self.hosts_per_rack, self.racks, strict=True)):
            raise ValueError("a rack has fewer hosts than workers")
        if not (self.nic_gbps > 0 and self.oversubscription > 0 and self.alpha_s >= 0):
            raise ValueError("nic_gbps and oversubscription must be > 0, alpha_s >= 0")
        if len(self.background) not in (0, 2):
            raise ValueError("background needs exactly two workers (one flow each way) or none")
        object.__setattr__(self, "rack_of", {w: c for c, r in enumerate(self.racks) for w in r})

    def uplink(self, rack: int) -> float:
        """Uplink capacity of ``rack`` in Gb/s."""
        if self.uplink_gbps is not None:
            return self.uplink_gbps
        return self.hosts_per_rack[rack] * self.nic_gbps / self.oversubscription

    def build(self) -> tuple[Network, list[int]]:
        """A fresh network with the background flows started at 0; returns their ids."""
        net = Network(keep_finished=False)
        hosts = [f"w{w}" for w in self.rack_of] + ["bg0", "bg1"]
        for h in hosts:
            net.add_link(f"{h}-up", self.nic_gbps * GBPS)
            net.add_link(f"{h}-down", self.nic_gbps * GBPS)
        for c in range(len(self.racks)):
            net.add_link(f"r{c}-up", self.uplink(c) * GBPS)
            net.add_link(f"r{c}-down", self.uplink(c) * GBPS)
        ends = [
            (rack, f"w{h}" if h >= 0 else f"bg{i}") for i, (rack, h) in enumerate(self.background)
        ]
        fids = []
        for (ra, a), (rb, b) in (ends, ends[::-1]) if ends else ():
            fids.append(net.start_flow(0.0, _FOREVER, self._links(a, ra, b, rb)))
        return net, fids

    @staticmethod
    def _links(a: str, ra: int, b: str, rb: int) -> tuple[str, ...]:
        mid = (f"r{ra}-up", f"r{rb}-down") if ra != rb else ()
        return (f"{a}-up", *mid, f"{b}-down")

    def path(self, src: int, dst: int) -> tuple[str, ...]:
        """Links of a flow from worker ``src`` to worker ``dst``."""
        return self._links(f"w{src}", self.rack_of[src], f"w{dst}", self.rack_of[dst])


@dataclass
class _Ring:
    members: tuple[int, ...]
    steps: int
    chunk: float
    done_steps: int = 0
    flows: set[int] = field(default_factory=set)


def run_phase(
    net: Network, rn: RackNet, rings: Sequence[tuple[Group, int, float]], t0: float
) -> dict[Group, float]:
    """Run rings ``(members, steps, chunk bytes)`` concurrently from ``t0``; return their ends."""
    active: dict[int, _Ring] = {}
    owner: dict[int, int] = {}
    ends: dict[Group, float] = {}

    def launch(i: int, ring: _Ring, now: float) -> None:
        m = ring.members
        for j, src in enumerate(m):
            fid = net.start_flow(now, ring.chunk, rn.path(src, m[(j + 1) % len(m)]), rn.alpha_s)
            ring.flows.add(fid)
            owner[fid] = i

    for i, (members, steps, chunk) in enumerate(rings):
        if len(members) < 2 or steps == 0:
            ends[members] = t0
            continue
        active[i] = _Ring(tuple(members), steps, chunk)
        launch(i, active[i], t0)
    while active:
        nxt = net.next_completion()
        if nxt is None:
            raise RuntimeError("rings in flight but no flow completes")
        for fid, end in net.advance(nxt[0]):
            i = owner.pop(fid, -1)
            ring = active.get(i)
            if ring is None:
                continue
            ring.flows.discard(fid)
            if ring.flows:
                continue
            ring.done_steps += 1
            if ring.done_steps == ring.steps:
                ends[ring.members] = end
                del active[i]
            else:
                launch(i, ring, end)
    return ends


def allreduce_rings(groups: Sequence[Group], model_bytes: float) -> list[tuple[Group, int, float]]:
    """Ring all-reduce of each group: 2(m − 1) steps of S/m."""
    return [(g, 2 * (len(g) - 1), model_bytes / len(g)) for g in groups]


def step_time(
    rn: RackNet, groups: Sequence[Group], model_bytes: float
) -> tuple[float, dict[Group, float]]:
    """Parallel group all-reduces (one DS-Sync step, or AR with one group): (time, per group)."""
    net, _ = rn.build()
    ends = run_phase(net, rn, allreduce_rings(groups, model_bytes), 0.0)
    return max(ends.values(), default=0.0), ends


def pattern_time(
    rn: RackNet, pattern: Pattern, model_bytes: float
) -> tuple[float, list[tuple[Group, float]]]:
    """Mean communication time per iteration over one period, and the (group, time) records."""
    total, records = 0.0, []
    for step in pattern.steps:
        t, ends = step_time(rn, step, model_bytes)
        total += t
        records += [(g, ends[g]) for g in step]
    return total / pattern.period, records


def hierarchical_time(rn: RackNet, model_bytes: float) -> float:
    """Reduce-scatter in racks, leaders' all-reduce, all-gather in racks, in sequence."""
    net, _ = rn.build()
    racks = [tuple(r) for r in rn.racks]
    t = max(
        run_phase(net, rn, [(r, len(r) - 1, model_bytes / len(r)) for r in racks], 0.0).values()
    )
    leaders = tuple(r[0] for r in racks)
    t = max(run_phase(net, rn, allreduce_rings([leaders], model_bytes), t).values())
    return max(
        run_phase(net, rn, [(r, len(r) - 1, model_bytes / len(r)) for r in racks], t).values()
    )


def gossip_time(rn: RackNet, model_bytes: float) -> float:
    """Mean over one period of the time for every worker to push its model to its peer."""
    n = len(rn.rack_of)
    total = 0.0
    for t in range(gossip_period(n)):
        net, _ = rn.build()
        fids = {
            net.start_flow(0.0, model_bytes, rn.path(s, d), rn.alpha_s)
            for s, d in gossip_edges(n, t)
        }
        end = 0.0
        while fids:
            nxt = net.next_completion()
            if nxt is None:
                raise RuntimeError("gossip flows in flight but none completes")
            for fid, at in net.advance(nxt[0]):
                if fid in fids:
                    fids.discard(fid)
                    end = max(end, at)
        total += end
    return total / gossip_period(n)


def check_model_bytes(model_bytes: float) -> float:
    """``model_bytes`` if finite and > 0, else ValueError."""
    if not (math.isfinite(model_bytes) and model_bytes > 0):
        raise ValueError(f"model_bytes must be finite and > 0, got {model_bytes!r}")
    return model_bytes


@dataclass(frozen=True)
class DSSyncOutcome:
    """DS-Sync in the twin: the static pattern, what its records revealed, the adjusted one."""

    init_s: float
    found: Bottlenecks
    pattern: Pattern
    adjusted_s: float


def dssync_time(
    rn: RackNet, model_bytes: float, params: DSSyncParams | None = None
) -> DSSyncOutcome:
    """Run ``init_groups`` for one period, regroup from its group times, time the new pattern.

    The records are the twin's per-group ring durations (what ``commRecord`` would measure).
    """
    params = (params or DSSyncParams()).validate()
    racks = [list(r) for r in rn.racks]
    start = init_groups(racks)
    t_init, records = pattern_time(rn, start, check_model_bytes(model_bytes))
    found, new = regroup(records, racks, Bottlenecks(), params)
    pattern = new if new is not None else start
    t_adj = t_init if new is None else pattern_time(rn, pattern, model_bytes)[0]
    return DSSyncOutcome(t_init, found, pattern, t_adj)

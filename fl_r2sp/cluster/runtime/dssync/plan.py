"""What every worker of a DS-Sync-family run agrees on between two period boundaries.

A :class:`Plan` names the live workers, the process-group generation and the bottlenecks the
last regroup found. Every worker derives from it, with no further messages, its group of
iteration t (:class:`View`): the pattern is computed over the live workers renumbered 0..n-1
in rank order (the pattern generator needs ranks 0..n-1), then mapped back to ranks.

:func:`decide` is rank 0's decision at a boundary, from the reports that arrived in time:

* the live set becomes the workers that reported (a missing one is lost for the rest of the
  run; one that reports late finds itself excluded and leaves);
* the generation goes up when the live set changed or a reduce failed since the last boundary
  (every member then builds its groups afresh, under new store keys);
* DS-Sync with ``regroup``: the bottlenecks are detected from the successful reduces' records
  of the live workers (:func:`~fl_r2sp.cluster.policies.dssync.regroup.detect_bottlenecks`);
  the pattern is ``adjust_groups`` of them (``init_groups`` when none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fl_r2sp.cluster.policies.dssync.baselines import allreduce_pattern, gossip_period
from fl_r2sp.cluster.policies.dssync.patterns import Group, Pattern, adjust_groups
from fl_r2sp.cluster.policies.dssync.regroup import Bottlenecks, DSSyncParams, detect_bottlenecks


@dataclass(frozen=True)
class Plan:
    """The agreed state of one period.

    Attributes
    ----------
    live : tuple of int
        Live ranks, sorted.
    generation : int
        Process-group generation (part of every group id).
    bottlenecks : Bottlenecks
        Slow racks (indices among the racks with live workers) and delayed workers (indices
        among the live workers), as the regroup found them.
    """

    live: tuple[int, ...]
    generation: int = 0
    bottlenecks: Bottlenecks = field(default_factory=Bottlenecks)

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (inverse of :meth:`from_json`)."""
        b = self.bottlenecks
        return {"live": list(self.live), "generation": self.generation,
                "slow_racks": list(b.slow_racks), "delayed": list(b.delayed)}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """Rebuild from :meth:`to_json`."""
        b = Bottlenecks(tuple(data["slow_racks"]), tuple(data["delayed"]))
        return cls(tuple(int(w) for w in data["live"]), int(data["generation"]), b)


class View:
    """One plan seen through the rack map: groups, hierarchy and gossip peers in ranks.

    Parameters
    ----------
    plan : Plan
        The agreed plan.
    racks : sequence of sequence of int
        The run's rack map (all ranks).
    scheme : str
        ``dssync``, ``allreduce``, ``hierarchical`` or ``gossip``.
    """

    def __init__(self, plan: Plan, racks: Sequence[Sequence[int]], scheme: str) -> None:
        self.plan, self.scheme = plan, scheme
        self.live = plan.live
        index = {w: i for i, w in enumerate(self.live)}
        # racks with at least one live member, members renumbered 0..n-1 (rotation order kept)
        self.racks = [[w for w in rack if w in index] for rack in racks]
        self.racks = [r for r in self.racks if r]
        compact = [[index[w] for w in r] for r in self.racks]
        b = plan.bottlenecks
        if scheme == "dssync":
            self.pattern: Pattern = adjust_groups(compact, b.slow_racks, b.delayed)
        else:
            self.pattern = allreduce_pattern(len(self.live))

    def group(self, t: int, rank: int) -> Group:
        """Ranks of ``rank``'s group in iteration ``t`` (DS-Sync and all-reduce)."""
        g = self.pattern.group(t, self.live.index(rank))
        return tuple(self.live[i] for i in g)

    def groups_of(self, rank: int) -> set[Group]:
        """Every group of ``rank`` over one period (the ones worth keeping cached)."""
        return {self.group(t, rank) for t in range(self.pattern.period)}

    def rack_of(self, rank: int) -> list[int]:
        """The live members of ``rank``'s rack; the first is its leader (hierarchical)."""
        return next(r for r in self.racks if rank in r)

    def leaders(self) -> tuple[int, ...]:
        """The first live rank of every rack (hierarchical all-reduce)."""
        return tuple(r[0] for r in self.racks)

    def gossip_peers(self, t: int, rank: int) -> tuple[int, int]:
        """``(send_to, receive_from)`` in iteration ``t``: ±2^(t mod ⌈log2 n⌉) among the live."""
        n = len(self.live)
        i = self.live.index(rank)
        shift = 2 ** (t % gossip_period(n)) % n
        return self.live[(i + shift) % n], self.live[(i - shift) % n]


def decide(
    reports: Mapping[int, Mapping[str, Any]],
    racks: Sequence[Sequence[int]],
    plan: Plan,
    scheme: str,
    params: DSSyncParams,
    regroup: bool,
) -> Plan:
    """The plan of the next period from the reports that arrived (module docstring).

    Parameters
    ----------
    reports : mapping of int to mapping
        Per reporting rank: ``{"failed": int, "records": [[members, seconds], ...]}``.
    racks, scheme, params, regroup
        As in :class:`~fl_r2sp.cluster.runtime.dssync.config.DSSyncRunConfig`.
    plan : Plan
        The plan of the period that ends.

    Raises
    ------
    ValueError
        If no worker reported.
    """
    live = tuple(sorted(w for w in reports if w in plan.live))
    if not live:
        raise ValueError("no live worker reported at the boundary")
    failed = any(int(r.get("failed", 0)) > 0 for r in reports.values())
    generation = plan.generation + (1 if failed or live != plan.live else 0)
    found = Bottlenecks()
    if scheme == "dssync" and regroup:
        view = View(Plan(live), racks, scheme)
        index = {w: i for i, w in enumerate(live)}
        records: list[tuple[Group, float]] = []
        for rep in reports.values():
            for members, seconds in rep.get("records", []):
                if all(m in index for m in members):
                    records.append((tuple(index[m] for m in members), float(seconds)))
        compact = [[index[w] for w in r] for r in view.racks]
        found = detect_bottlenecks(records, compact, params.slowness_threshold)
    return Plan(live, generation, found)

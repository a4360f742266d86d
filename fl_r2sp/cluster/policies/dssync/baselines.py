"""DS-Sync's baselines as patterns and schedules: all-reduce, hierarchical all-reduce, gossip.

* All-reduce BSP: one group of everyone, every iteration (a :class:`~.dssync.Pattern`).
* Hierarchical all-reduce (as in BlueConnect): three sequential phases, described by
  :class:`HierarchicalSchedule`: each rack reduce-scatters among its members, the rack leaders
  (the first rank of each rack) all-reduce, each rack all-gathers from its leader. The result is
  the world average (one all-reduce of everyone), so its mixing matrix is ``J/N``.
* Gossip on a dynamic exponential graph (SGP): in iteration t worker i sends to
  ``(i + 2^(t mod ⌈log2 N⌉)) mod N`` and averages with what it receives, ``x_i ← (x_i + x_j)/2``
  for its in-neighbour j. Each step's matrix is ``(I + S^k)/2`` with S the cyclic shift:
  doubly stochastic but not a partition, so gossip is a list of directed edges, not groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fl_r2sp.cluster.policies.dssync.patterns import Group, Pattern, check_racks


def allreduce_pattern(num_workers: int) -> Pattern:
    """One group of ranks 0..N-1 with period 1.

    Raises
    ------
    ValueError
        If N < 1.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    return Pattern(((tuple(range(num_workers)),),), num_workers)


@dataclass(frozen=True)
class HierarchicalSchedule:
    """Hierarchical all-reduce as three sequential phases.

    Attributes
    ----------
    racks : tuple of Group
        Intra-rack groups (phase 1 reduce-scatter, phase 3 all-gather).
    leaders : Group
        One leader per rack (phase 2 all-reduce among them).
    """

    racks: tuple[Group, ...]
    leaders: Group

    def phases(self) -> tuple[tuple[str, tuple[Group, ...]], ...]:
        """``(kind, groups)`` in order: reduce-scatter, all-reduce of leaders, all-gather."""
        return (
            ("reduce_scatter", self.racks),
            ("allreduce", (self.leaders,)),
            ("allgather", self.racks),
        )


def hierarchical_schedule(racks: Sequence[Sequence[int]]) -> HierarchicalSchedule:
    """The schedule for a rack map; the leader is each rack's first listed rank."""
    check_racks(racks)
    return HierarchicalSchedule(
        tuple(tuple(sorted(r)) for r in racks), tuple(int(r[0]) for r in racks)
    )


def gossip_period(num_workers: int) -> int:
    """⌈log2 N⌉ (at least 1): the number of distinct shifts."""
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    return max(1, math.ceil(math.log2(num_workers))) if num_workers > 1 else 1


def gossip_edges(num_workers: int, t: int) -> tuple[tuple[int, int], ...]:
    """``(sender, receiver)`` of iteration ``t``: i sends to ``(i + 2^(t mod P)) mod N``."""
    if num_workers == 1:
        return ()
    shift = 2 ** (t % gossip_period(num_workers)) % num_workers
    return tuple((i, (i + shift) % num_workers) for i in range(num_workers))


def gossip_matrix(num_workers: int, t: int) -> NDArray[np.float64]:
    """``W`` of iteration ``t``: ``x ← W x`` with ``x_i ← (x_i + x_sender)/2``."""
    w = np.eye(num_workers) * (0.5 if num_workers > 1 else 1.0)
    for src, dst in gossip_edges(num_workers, t):
        w[dst, src] += 0.5
    return w

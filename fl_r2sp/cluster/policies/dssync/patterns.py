"""DS-Sync (divide-and-shuffle) group patterns: ``initGroups``, ``adjustGroups``, regrouping.

A *pattern* is a period of B *steps*; a step is a partition of the ranks into disjoint groups
that average their parameters by all-reduce, all groups in parallel. Worker ``rank`` in
iteration ``t`` averages with ``pattern.group(t, rank)`` (the paper's ``groupList[t % B][rank]``,
``docs/paper-notes.md`` §6).

Rules (the paper's, with our reading where it says nothing; each marked *ours*):

* ``init_groups`` (static topology): each rack's members take turns (round robin, *ours*) as
  the rack's representative; the representatives form one inter-rack group, the rest of each
  rack its intra-rack group. Only one connection crosses each rack uplink.
* ``adjust_groups`` with slow racks (a contended uplink): each slow rack's representative is
  paired with a regular rack's representative in a group of two; the regular partner rotates
  through the regular racks (``(⌊t/B_rep⌋ + j) mod |R|`` for the j-th slow rack, B_rep the
  representatives' cycle, *ours*); the other
  regular representatives form the large inter-rack group. More slow than regular racks
  (*ours*): the slow racks take the partners in turn and the unpaired ones pair among themselves;
  a representative left alone stays in its intra-rack group for that step.
* ``adjust_groups`` with delayed workers (a contended NIC): a delayed worker is never a
  representative; it is paired with a rotating regular partner of its rack in a small intra-rack
  group, and the rest of the rack (the hub) forms a large one. "Enough workers" (*ours*): at
  least one regular member besides the representative per delayed worker; otherwise the rack
  falls back to the static rule (the delayed worker takes its turn as representative), since a
  delayed worker that is never representative and has no partner would be cut off.

Period B (*ours*): B_rep, the least common multiple of the racks' rotation lengths, times
lcm(|R|, |S|) when some racks are slow, so that each rotation completes within one period. If
that period does not connect every rank (racks of two, whose turn orders run in lockstep), it
is repeated with rack c's turn order shifted by c, 2c, ... until it does.

:mod:`.check` validates patterns; :mod:`.regroup` turns measured communication
times into slow racks and delayed workers.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import reduce

Group = tuple[int, ...]
Step = tuple[Group, ...]


@dataclass(frozen=True)
class Pattern:
    """A periodic divide-and-shuffle pattern.

    Parameters
    ----------
    steps : tuple of Step
        One partition of the ranks per iteration of the period (each group sorted, groups in
        order of their smallest rank).
    num_workers : int
        N, the ranks 0..N-1 that every step covers.
    """

    steps: tuple[Step, ...]
    num_workers: int

    @property
    def period(self) -> int:
        """B, the number of steps."""
        return len(self.steps)

    def step(self, t: int) -> Step:
        """The partition of iteration ``t`` (``t >= 0``)."""
        if t < 0:
            raise ValueError(f"iteration must be >= 0, got {t}")
        return self.steps[t % len(self.steps)]

    def rank_map(self, t: int) -> tuple[Group, ...]:
        """``groups[t % B]``: the group of every rank in iteration ``t``, indexed by rank."""
        out: list[Group] = [()] * self.num_workers
        for g in self.step(t):
            for r in g:
                out[r] = g
        return tuple(out)

    def group(self, t: int, rank: int) -> Group:
        """The group of ``rank`` in iteration ``t``."""
        if not 0 <= rank < self.num_workers:
            raise ValueError(f"rank {rank} out of range 0..{self.num_workers - 1}")
        return self.rank_map(t)[rank]


def check_racks(racks: Sequence[Sequence[int]]) -> int:
    """Check a rack map (lists of ranks) covers 0..N-1 exactly once; return N.

    Raises
    ------
    ValueError
        On an empty rack, a repeated rank or a gap in 0..N-1.
    """
    if len(racks) == 0 or any(len(r) == 0 for r in racks):
        raise ValueError(f"racks must be non-empty lists of ranks, got {racks!r}")
    ranks = sorted(r for rack in racks for r in rack)
    if ranks != list(range(len(ranks))):
        raise ValueError(f"racks must cover ranks 0..N-1 exactly once, got {racks!r}")
    return len(ranks)


def _normalise(groups: Sequence[Collection[int]]) -> Step:
    return tuple(sorted((tuple(sorted(g)) for g in groups if len(g) > 0), key=lambda g: g[0]))


def _lcm(values: Sequence[int]) -> int:
    return reduce(lambda a, b: a * b // math.gcd(a, b), [v for v in values if v > 0], 1)


def init_groups(racks: Sequence[Sequence[int]]) -> Pattern:
    """The static-topology pattern (``initGroups``); see the module docstring.

    With one rack the pattern is one group of everyone (no uplink to protect).
    """
    return adjust_groups(racks, slow_racks=(), delayed=())


def adjust_groups(
    racks: Sequence[Sequence[int]],
    slow_racks: Collection[int] = (),
    delayed: Collection[int] = (),
) -> Pattern:
    """The pattern for contended rack uplinks and NICs (``adjustGroups``).

    Parameters
    ----------
    racks : sequence of sequence of int
        Rack map; rack ``c`` lists its ranks in rotation order.
    slow_racks : collection of int, default ()
        Indices of racks whose uplink is contended.
    delayed : collection of int, default ()
        Ranks whose NIC is contended.

    Raises
    ------
    ValueError
        On a bad rack map, an unknown rack index or rank.
    """
    n = check_racks(racks)
    c = len(racks)
    slow = sorted(set(slow_racks))
    if any(not 0 <= s < c for s in slow):
        raise ValueError(f"slow_racks {slow} out of range 0..{c - 1}")
    late = set(delayed)
    if any(not 0 <= d < n for d in late):
        raise ValueError(f"delayed ranks {sorted(late)} out of range 0..{n - 1}")
    if c == 1:
        return Pattern(((tuple(range(n)),),), n)
    plans = [_RackPlan(list(r), late) for r in racks]
    regular = [k for k in range(c) if k not in slow]
    base = _lcm([p.rotation for p in plans])
    # the pairings advance once per full representative cycle, so every representative of a
    # slow rack meets every regular rack (in lockstep some pairs would never meet)
    cycles = _lcm([len(regular), len(slow)]) if slow and regular else 1
    steps: list[Step] = []
    for shifted in range(max(p.rotation for p in plans)):
        for t in range(base * cycles):
            steps.append(_step(plans, slow, regular, t, base, shifted))
        if union_connected(steps, n):
            break
    return Pattern(tuple(steps), n)


def _step(
    plans: list[_RackPlan], slow: list[int], regular: list[int], t: int, base: int, shifted: int
) -> Step:
    # In the k-th extra period rack c's turn order is shifted by c·k: with two-member racks the
    # plain order would only ever pair the first members together and the second ones together.
    shifts = [c * shifted for c in range(len(plans))]
    reps = [p.rep(t + d) for p, d in zip(plans, shifts, strict=True)]
    inter, lonely = _inter_groups(reps, slow, regular, t // base)
    groups: list[Collection[int]] = list(inter)
    for k, (p, d) in enumerate(zip(plans, shifts, strict=True)):
        groups += p.intra(t + d, keep_rep=k in lonely)
    return _normalise(groups)


def union_connected(steps: Sequence[Step], num_workers: int) -> bool:
    """True if the union of all groups of ``steps`` connects ranks 0..N-1 (union-find)."""
    parent = list(range(num_workers))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for step in steps:
        for g in step:
            for r in g[1:]:
                parent[find(r)] = find(g[0])
    return len({find(r) for r in range(num_workers)}) == 1


class _RackPlan:
    """One rack's rotation: representative, delayed workers' partners, hub."""

    def __init__(self, members: list[int], late: set[int]) -> None:
        self.members = members
        self.delayed = [m for m in members if m in late]
        self.pool = [m for m in members if m not in late]
        # enough regular workers: a representative plus one partner per delayed worker
        if self.delayed and len(self.pool) < len(self.delayed) + 1:
            self.pool, self.delayed = list(members), []
        self.rotation = len(self.pool)

    def rep(self, t: int) -> int:
        return self.pool[t % len(self.pool)]

    def intra(self, t: int, keep_rep: bool) -> list[Collection[int]]:
        rep = self.rep(t)
        if not self.delayed:
            rest = [m for m in self.members if keep_rep or m != rep]
            return [rest]
        k = len(self.pool)
        partners = [self.pool[(t + 1 + j) % k] for j in range(len(self.delayed))]
        small: list[Collection[int]] = [{d, p} for d, p in zip(self.delayed, partners, strict=True)]
        used = set(partners) | set(self.delayed) | ({rep} if not keep_rep else set())
        hub = [m for m in self.members if m not in used]
        return small + [hub]


def _inter_groups(
    reps: list[int], slow: list[int], regular: list[int], t: int
) -> tuple[list[Collection[int]], set[int]]:
    """Inter-rack groups of pairing round ``t`` and the racks whose representative is alone."""
    if not slow or not regular:
        return [set(reps)], set()
    groups: list[Collection[int]] = []
    order = [slow[(t + j) % len(slow)] for j in range(len(slow))]  # who gets a partner first
    paired = order[: len(regular)]
    partners = [regular[(t + j) % len(regular)] for j in range(len(paired))]
    for s, r in zip(paired, partners, strict=True):
        groups.append({reps[s], reps[r]})
    unpaired = order[len(regular) :]
    for j in range(0, len(unpaired) - 1, 2):
        groups.append({reps[unpaired[j]], reps[unpaired[j + 1]]})
    lonely = {unpaired[-1]} if len(unpaired) % 2 == 1 else set()
    large = [r for r in regular if r not in partners]
    if len(large) == 1:
        lonely.add(large[0])
    elif large:
        groups.append({reps[r] for r in large})
    return groups, lonely

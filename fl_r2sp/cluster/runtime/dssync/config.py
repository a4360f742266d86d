"""Configuration of a DS-Sync-family run: DS-Sync, all-reduce BSP, hierarchical AR, gossip.

A :class:`DSSyncRunConfig` wraps the shared :class:`~fl_r2sp.cluster.config.ClusterConfig`
(model, data, learning rate, seeds, timeouts, emulated slow machines) and adds the rack map, the
per-link caps and DS-Sync's knobs (:class:`~fl_r2sp.cluster.policies.dssync.regroup.DSSyncParams`).
There is no parameter server and no controller: every rank is a worker
(``world_size == workers``) and derives its group of iteration t from the shared pattern.

Emulated network (one machine, docs/cluster-policies.md "DS-Sync on the runtime"): every worker
has a NIC capped at ``nic_mb_s[w]`` MB/s, every rack an uplink capped at ``uplink_mb_s[c]`` MB/s
shared by all its workers (0 = not capped). :func:`scenario` builds the paper's three bottleneck
scenarios from one nominal rate: a link that shares its capacity with one persistent background
flow gets ``contended_share`` of it (max-min fair share 1/2, the paper's "over 2x").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.dssync.patterns import check_racks
from fl_r2sp.cluster.policies.dssync.regroup import DSSyncParams
from fl_r2sp.cluster.runtime.peer.config import (
    PeerRunMixin,
    run_kwargs,
    run_to_dict,
)

DSSYNC_SCHEMES: tuple[str, ...] = ("dssync", "allreduce", "hierarchical", "gossip")
#: The schemes whose groups follow the racks: without a rack map they are plain all-reduce.
RACKED: tuple[str, ...] = ("dssync", "hierarchical")
SCENARIOS: tuple[str, ...] = ("S1", "S2", "S3")

Racks = tuple[tuple[int, ...], ...]


#: The derived boundary timeout, in ``timeout_s`` (``boundary_timeout_s = 0``).
BOUNDARY_TIMEOUTS = 3.0
#: The least boundary timeout accepted, in ``timeout_s``.
MIN_BOUNDARY_TIMEOUTS = 2.0


@dataclass(frozen=True)
class DSSyncRunConfig(PeerRunMixin):
    """A DS-Sync-family run (defaults in brackets).

    Parameters
    ----------
    base : ClusterConfig
        Shared knobs; ``workers``, ``model``, ``dataset``, ``max_train``, ``batch_size``,
        ``lr``, ``max_iterations`` (iterations of every worker), ``chunk_kb``,
        ``compute_multipliers``, ``iteration_delays``, ``devices``, ``threads``, ``seed``,
        ``timeout_s`` (every gloo operation and store wait), ``run_timeout_s``, ``run_dir``,
        ``eval_samples`` are used.
    scheme : str ["dssync"]
        One of :data:`DSSYNC_SCHEMES`.
    racks : tuple of tuple of int [()]
        Rack map (ranks per rack, in rotation order); () = one rack of every worker.
    params : DSSyncParams [DSSyncParams()]
        Regroup period (100), slowness threshold (1.5), EMA factor (0.999).
    nic_mb_s : tuple of float [()]
        Per-worker NIC cap in MB/s (0 = not capped; () = none capped).
    uplink_mb_s : tuple of float [()]
        Per-rack uplink cap in MB/s (0 = not capped; () = none capped).
    regroup : bool [True]
        DS-Sync only: adjust the pattern at period boundaries from measured times (False
        keeps ``initGroups``' static pattern).
    boundary_timeout_s : float [0.0]
        How long rank 0 waits at a period boundary for a live worker's report before it
        declares the worker lost, for a worker that hangs without dying (one whose process
        ended is dropped at once). 0 derives it: :data:`BOUNDARY_TIMEOUTS` x ``timeout_s``
        (:attr:`boundary_wait_s`). A value below :data:`MIN_BOUNDARY_TIMEOUTS` x ``timeout_s``
        is refused: a worker whose group has a hung member waits up to one ``timeout_s`` per
        failed synchronisation before it reaches the boundary, and would be dropped though
        alive.
    """

    base: ClusterConfig = field(default_factory=ClusterConfig)
    scheme: str = "dssync"
    racks: Racks = ()
    params: DSSyncParams = field(default_factory=DSSyncParams)
    nic_mb_s: tuple[float, ...] = ()
    uplink_mb_s: tuple[float, ...] = ()
    regroup: bool = True
    boundary_timeout_s: float = 0.0

    @property
    def scheme_name(self) -> str:
        """The ``--scheme`` this run plays (the scheme table's key)."""
        return self.scheme

    @property
    def boundary_wait_s(self) -> float:
        """The boundary timeout in force: the given one, or :data:`BOUNDARY_TIMEOUTS` x
        ``base.timeout_s``."""
        return self.boundary_timeout_s or BOUNDARY_TIMEOUTS * self.base.timeout_s

    def rack_map(self) -> Racks:
        """The racks, or one rack of everyone when none are given."""
        return self.racks or (tuple(range(self.base.workers)),)

    def validate(self, check_model: bool = True) -> DSSyncRunConfig:
        """Check every field; return ``self``.

        Raises
        ------
        ValueError
            Naming the field, its value and what is allowed.
        """
        self.base.validate(check_model=check_model)
        self.params.validate()
        if self.scheme not in DSSYNC_SCHEMES:
            raise ValueError(f"scheme must be one of {DSSYNC_SCHEMES}, got {self.scheme!r}")
        if self.scheme in RACKED and not self.racks:
            raise ValueError(f"{self.scheme} without racks is plain all-reduce (one rack of "
                             "everyone): give --racks or --scenario, or use --scheme "
                             "allreduce")  # fmt: skip
        n = check_racks(self.rack_map())
        if n != self.base.workers:
            raise ValueError(f"racks cover {n} ranks but the run has {self.base.workers} workers")
        for name, size in (("nic_mb_s", n), ("uplink_mb_s", len(self.rack_map()))):
            caps = getattr(self, name)
            if caps and (len(caps) != size or not all(math.isfinite(c) and c >= 0 for c in caps)):
                raise ValueError(f"{name} needs {size} finite values >= 0, got {caps}")
        if not isinstance(self.regroup, bool):
            raise ValueError(f"regroup must be a bool, got {self.regroup!r}")
        self._check_boundary_timeout()
        return self

    def _check_boundary_timeout(self) -> None:
        given, least = self.boundary_timeout_s, MIN_BOUNDARY_TIMEOUTS * self.base.timeout_s
        if not (math.isfinite(given) and given >= 0):
            raise ValueError(f"boundary_timeout_s must be >= 0 (0 = derived), got {given!r}")
        if 0 < given < least:
            raise ValueError(
                f"--boundary-timeout {given:g} s is shorter than {MIN_BOUNDARY_TIMEOUTS:g} x "
                f"--timeout ({self.base.timeout_s:g} s): a worker whose group has a hung member "
                "waits up to one --timeout per failed synchronisation before it reaches the "
                f"boundary and would be dropped though alive; give --boundary-timeout >= "
                f"{least:g}, a smaller --timeout, or leave --boundary-timeout at 0 (derived: "
                f"{BOUNDARY_TIMEOUTS:g} x --timeout)")  # fmt: skip

    def caveats(self) -> list[str]:
        """Warnings about settings a user may mean: one explicit rack (DS-Sync and hierarchical
        all-reduce then synchronise like a flat all-reduce; a test of the degenerate case may
        want it), and the shared ones of ``base``."""
        out = self.base.caveats()
        if self.scheme in RACKED and len(self.racks) == 1:
            out.append(f"{self.scheme} on one rack synchronises like a flat all-reduce")
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict; inverse of :meth:`from_dict`."""
        out = run_to_dict(self)
        out["params"] = dataclasses.asdict(self.params)
        out["racks"] = [list(r) for r in self.racks]
        out["nic_mb_s"], out["uplink_mb_s"] = list(self.nic_mb_s), list(self.uplink_mb_s)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DSSyncRunConfig:
        """Rebuild from :meth:`to_dict`'s output (unknown keys raise)."""
        kwargs = run_kwargs(cls, data, "DS-Sync")
        if isinstance(kwargs.get("params"), dict):
            kwargs["params"] = DSSyncParams(**kwargs["params"])
        kwargs["racks"] = tuple(tuple(int(r) for r in rack) for rack in kwargs.get("racks", ()))
        for name in ("nic_mb_s", "uplink_mb_s"):
            kwargs[name] = tuple(float(c) for c in kwargs.get(name, ()))
        return cls(**kwargs)


@dataclass(frozen=True)
class Scenario:
    """Rack map and link caps of one emulated bottleneck scenario."""

    racks: Racks
    nic_mb_s: tuple[float, ...]
    uplink_mb_s: tuple[float, ...]


def scenario(name: str, workers: int, link_mb_s: float, contended_share: float = 0.5) -> Scenario:
    """The paper's S1-S3 on two racks, every NIC and uplink nominally ``link_mb_s`` MB/s.

    * S3 (static topology heterogeneity): racks of ⌊N/2⌋ and the rest, nothing contended.
      Each rack's uplink is one path of the NIC's rate (the twin's "one-path" model), so only
      traffic that crosses racks shares it.
    * S2 (inter-rack contention): as S3, a background flow between the racks halves both
      uplinks.
    * S1 (inter-rack + end-host contention): racks of ⌊N/2⌋ + 1 and the rest (the paper's
      5 + 3 for 8 workers); the background flow halves both uplinks and the NIC of the last
      worker of rack 0 (the paper's worker 4, which shares its node with a background worker).

    Raises
    ------
    ValueError
        On an unknown name, fewer than 4 workers, a rate <= 0 or a share outside (0, 1].
    """
    if name not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, got {name!r}")
    if workers < 4:
        raise ValueError(f"the scenarios need >= 4 workers (2 racks of 2), got {workers}")
    if not (math.isfinite(link_mb_s) and link_mb_s > 0):
        raise ValueError(f"link_mb_s must be > 0, got {link_mb_s!r}")
    if not 0.0 < contended_share <= 1.0:
        raise ValueError(f"contended_share must lie in (0, 1], got {contended_share!r}")
    split = workers // 2 + (1 if name == "S1" else 0)
    racks = (tuple(range(split)), tuple(range(split, workers)))
    nic = [link_mb_s] * workers
    up = link_mb_s * (contended_share if name in ("S1", "S2") else 1.0)
    if name == "S1":
        nic[split - 1] = link_mb_s * contended_share
    return Scenario(racks, tuple(nic), (up, up))

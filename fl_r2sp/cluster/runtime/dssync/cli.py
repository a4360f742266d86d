"""Command-line flags of the DS-Sync family (``--scheme dssync|hierarchical|gossip``).

The scheme table (:mod:`fl_r2sp.cluster.schemes`) lists :func:`add_flags`, :func:`build` and
:func:`describe` in its family row. All-reduce BSP on this runtime (the DS-Sync baseline, with
the rack network) is ``--scheme dssync`` with one rack, or the all-reduce family's
``--scheme allreduce`` (per-worker links, no racks).

The network: ``--scenario S1|S2|S3 --link-rate R`` builds the paper's bottleneck scenario on
two racks with every link nominally R MB/s
(:func:`~fl_r2sp.cluster.runtime.dssync.config.scenario`); or give ``--racks 0,1,2,3/4,5,6,7``
and the caps ``--nic-caps`` (per worker) and ``--uplink-caps`` (per rack) yourself.
"""

from __future__ import annotations

import argparse

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.dssync.regroup import DSSyncParams
from fl_r2sp.cluster.runtime.common.cli_values import links_text, parse_floats
from fl_r2sp.cluster.runtime.dssync.config import SCENARIOS, DSSyncRunConfig, scenario

#: Flags (argparse dests) that only DS-Sync itself uses.
DSSYNC_ONLY: tuple[str, ...] = ("slowness", "no_regroup")


def parse_racks(text: str) -> tuple[tuple[int, ...], ...]:
    """``"0,1,2/3,4"`` -> ``((0, 1, 2), (3, 4))`` (racks separated by '/', ranks by ',')."""
    try:
        return tuple(tuple(int(r) for r in rack.split(",") if r.strip())
                     for rack in text.split("/") if rack.strip())  # fmt: skip
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected racks like 0,1,2/3,4, got {text!r}") from exc


def add_flags(g: argparse._ArgumentGroup) -> None:
    """Add the family's flags to ``g``; defaults in brackets."""
    p, d = DSSyncParams(), DSSyncRunConfig()
    a = g.add_argument
    a("--scenario", choices=SCENARIOS, default=None,
      help="the paper's bottleneck scenario on 2 racks (needs --link-rate) [none]")  # fmt: skip
    a("--link-rate", type=float, default=0.0,
      help="nominal NIC and uplink rate of --scenario, MB/s [0]")  # fmt: skip
    a("--contended-share", type=float, default=0.5,
      help="share of a contended link's rate left to the job (--scenario) [0.5]")  # fmt: skip
    a("--racks", type=parse_racks, default=(),
      help="rack map, e.g. 0,1,2,3/4,5,6,7 (dssync and hierarchical need one) [none]")  # fmt: skip
    a("--nic-caps", type=parse_floats, default=(),
      help="per-worker NIC caps, MB/s (0 = none) [none]")  # fmt: skip
    a("--uplink-caps", type=parse_floats, default=(), help="per-rack uplink caps, MB/s [none]")
    a("--regroup-period", type=int, default=p.period,
      help="iterations between period boundaries, where every scheme of the family writes its "
           "rows and drops lost workers, and dssync regroups "
           f"[{p.period}]")  # fmt: skip
    a(
        "--slowness",
        type=float,
        default=p.slowness_threshold,
        help=f"dssync: slow if above k x the median rank score [{p.slowness_threshold}]",
    )
    a("--no-regroup", action="store_true", help="dssync: keep initGroups' static pattern")
    a("--ema-factor", type=float, default=p.ema_factor,
      help=f"factor f of the local EMA copy [{p.ema_factor}]")  # fmt: skip
    a(
        "--boundary-timeout",
        type=float,
        default=d.boundary_timeout_s,
        help="wait for a hung worker's report at a boundary, s; a worker whose process ended "
        "is dropped at once (0 = 3 x --timeout; at least 2 x --timeout) [0]",
    )


def build(ns: argparse.Namespace, base: ClusterConfig, given: frozenset[str]) -> DSSyncRunConfig:
    """The (not yet validated) run of ``ns.scheme`` on ``base``.

    Raises
    ------
    ValueError
        On a DS-Sync-only flag with another scheme, ``--scenario`` without ``--link-rate`` or
        together with ``--racks``/``--nic-caps``/``--uplink-caps``.
    """
    for dest in sorted(given & set(DSSYNC_ONLY)):
        if ns.scheme != "dssync":
            raise ValueError(f"--{dest.replace('_', '-')} applies to --scheme dssync only")
    racks, nic, up = ns.racks, ns.nic_caps, ns.uplink_caps
    if ns.scenario is not None:
        if given & {"racks", "nic_caps", "uplink_caps"}:
            raise ValueError("give --scenario or --racks/--nic-caps/--uplink-caps, not both")
        sc = scenario(ns.scenario, base.workers, ns.link_rate, ns.contended_share)
        racks, nic, up = sc.racks, sc.nic_mb_s, sc.uplink_mb_s
    params = DSSyncParams(period=ns.regroup_period, slowness_threshold=ns.slowness,
                          ema_factor=ns.ema_factor)  # fmt: skip
    return DSSyncRunConfig(
        base=base, scheme=ns.scheme, racks=tuple(racks), params=params, nic_mb_s=tuple(nic),
        uplink_mb_s=tuple(up), regroup=not ns.no_regroup,
        boundary_timeout_s=ns.boundary_timeout,
    )  # fmt: skip


def describe(cfg: DSSyncRunConfig) -> str:
    """One line naming the run: scheme, workers, racks, caps."""
    b = cfg.base
    racks = "/".join(",".join(str(r) for r in rack) for rack in cfg.rack_map())
    links = links_text([c for c in (*cfg.nic_mb_s, *cfg.uplink_mb_s) if c > 0])
    return (f"{cfg.scheme}: {b.workers} workers (no PS), racks {racks}, {links}, {b.model} on "
            f"{b.dataset}, {b.max_iterations} iterations per worker")  # fmt: skip

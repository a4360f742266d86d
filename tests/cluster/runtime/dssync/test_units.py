"""Pure parts of the DS-Sync runtime: plans and views, the boundary decision, links, config."""

from __future__ import annotations

import pytest
import torch.distributed as dist

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.dssync.regroup import Bottlenecks, DSSyncParams
from fl_r2sp.cluster.runtime.dssync.comm import successor_crosses
from fl_r2sp.cluster.runtime.dssync.config import DSSyncRunConfig, scenario
from fl_r2sp.cluster.runtime.dssync.links import FifoLink, SharedFifoLink, WorkerLinks
from fl_r2sp.cluster.runtime.dssync.plan import Plan, View, decide
from fl_r2sp.cluster.schemes import CLUSTER_SCHEMES

RACKS = ((0, 1, 2, 3), (4, 5, 6, 7))
PARAMS = DSSyncParams(period=100)


class Clock:
    """A settable fake clock."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_view_maps_the_pattern_of_the_live_workers_back_to_ranks() -> None:
    full = View(Plan(tuple(range(8))), RACKS, "dssync")
    # the paper's 4 + 4 example: t = 0 -> {0, 4}, {1, 2, 3}, {5, 6, 7}
    assert [full.group(0, w) for w in (0, 1, 4, 5)] == [(0, 4), (1, 2, 3), (0, 4), (5, 6, 7)]
    # worker 4 lost: rack 1 is (5, 6, 7), renumbered 4, 5, 6; t = 0 -> {0, 5}, {1, 2, 3}, {6, 7}
    seven = View(Plan((0, 1, 2, 3, 5, 6, 7)), RACKS, "dssync")
    assert [seven.group(0, w) for w in (0, 1, 5, 6)] == [(0, 5), (1, 2, 3), (0, 5), (6, 7)]
    assert seven.leaders() == (0, 5) and seven.rack_of(6) == [5, 6, 7]
    assert View(Plan((0, 1, 2)), RACKS, "allreduce").group(3, 1) == (0, 1, 2)
    # gossip among 7: shifts 1, 2, 4 (period 3); worker 7 (index 6) at t = 2 sends to index
    # (6 + 4) mod 7 = 3 (rank 3), receives from index 2 (rank 2)
    assert seven.gossip_peers(2, 7) == (3, 2)


def test_decide_drops_missing_workers_and_bumps_the_generation_on_failures() -> None:
    plan = Plan(tuple(range(8)), generation=3)
    reports = {w: {"failed": 0, "records": []} for w in range(8) if w != 6}
    nxt = decide(reports, RACKS, plan, "allreduce", PARAMS, regroup=True)
    assert nxt.live == (0, 1, 2, 3, 4, 5, 7) and nxt.generation == 4
    same = decide({w: {"failed": 0} for w in nxt.live}, RACKS, nxt, "allreduce", PARAMS, True)
    assert same.generation == 4  # nothing changed: cached groups stay valid
    failed = {w: {"failed": int(w == 2)} for w in nxt.live}
    assert decide(failed, RACKS, nxt, "allreduce", PARAMS, True).generation == 5
    with pytest.raises(ValueError, match="no live worker"):
        decide({9: {}}, RACKS, nxt, "allreduce", PARAMS, True)


def test_decide_regroups_dssync_from_the_records_of_live_workers() -> None:
    # every group with worker 5 took 2 s per model size, every other 1 s (ring factor applied:
    # a group of m members records 2(m-1)/m seconds per normalised second)
    steps = [View(Plan(tuple(range(8))), RACKS, "dssync").pattern.step(t) for t in range(4)]
    records = [[list(g), (2.0 if 5 in g else 1.0) * 2 * (len(g) - 1) / len(g)]
               for step in steps for g in step if len(g) > 1]  # fmt: skip
    reports = {w: {"failed": 0, "records": records if w == 0 else []} for w in range(8)}
    plan = decide(reports, RACKS, Plan(tuple(range(8))), "dssync", PARAMS, regroup=True)
    assert plan.bottlenecks == Bottlenecks((), (5,))
    assert decide(reports, RACKS, Plan(tuple(range(8))), "dssync", PARAMS, False).bottlenecks == (
        Bottlenecks()
    )
    # the adjusted pattern keeps worker 5 in a group of two inside rack 1, never as the rep
    view = View(plan, RACKS, "dssync")
    assert all(len(view.group(t, 5)) == 2 and view.group(t, 5)[0] >= 4 for t in range(12))


def test_plan_json_round_trip() -> None:
    plan = Plan((0, 2, 3), 7, Bottlenecks((1,), (0, 2)))
    assert Plan.from_json(plan.to_json()) == plan


def test_fifo_link_serves_reservations_in_order_at_its_rate() -> None:
    clock = Clock()
    link = FifoLink(1000.0, clock)
    assert link.reserve(500) == 0.5  # idle: starts now
    assert link.reserve(500) == 1.0  # queued behind the first
    clock.t = 3.0
    assert link.reserve(1000) == 4.0  # idle again: no credit for the gap


def test_shared_link_serialises_processes_through_the_store() -> None:
    store, clock = dist.HashStore(), Clock()
    a = SharedFifoLink(store, "up/0", 100.0, clock)
    b = SharedFifoLink(store, "up/0", 100.0, clock)
    assert a.reserve(100) == 1.0 and b.reserve(50) == 1.5 and a.reserve(50) == 2.0
    slept: list[float] = []
    nic = FifoLink(1000.0, clock)
    links = WorkerLinks(nic, SharedFifoLink(store, "up/1", 100.0, clock), sleep=slept.append)
    assert links.send(100, crosses=False) == pytest.approx(0.1)  # NIC only
    assert links.send(100, crosses=True) == pytest.approx(1.0)  # the uplink is the bottleneck
    assert slept == pytest.approx([0.1, 1.0])


def test_ring_successor_crossing_follows_rank_order() -> None:
    rack_of = {r: c for c, rack in enumerate(RACKS) for r in rack}
    members = (0, 1, 4, 5)  # ring 0 -> 1 -> 4 -> 5 -> 0: 1 and 5 send across
    assert [successor_crosses(members, r, rack_of) for r in members] == [False, True, False, True]


def test_scenarios_halve_the_contended_links() -> None:
    s1 = scenario("S1", 8, 20.0)
    assert s1.racks == ((0, 1, 2, 3, 4), (5, 6, 7))
    assert s1.nic_mb_s == (20.0, 20.0, 20.0, 20.0, 10.0, 20.0, 20.0, 20.0)
    assert s1.uplink_mb_s == (10.0, 10.0)
    s2, s3 = scenario("S2", 8, 20.0), scenario("S3", 6, 20.0)
    assert s2.racks == RACKS and s2.nic_mb_s == (20.0,) * 8 and s2.uplink_mb_s == (10.0, 10.0)
    assert s3.racks == ((0, 1, 2), (3, 4, 5)) and s3.uplink_mb_s == (20.0, 20.0)
    with pytest.raises(ValueError, match="scenario"):
        scenario("S4", 8, 20.0)


def test_config_round_trip_and_validation() -> None:
    base = ClusterConfig(workers=4, model="mlp", dataset="synthetic")
    cfg = DSSyncRunConfig(base=base, scheme="gossip", racks=((0, 1), (2, 3)),
                          nic_mb_s=(1.0, 2.0, 3.0, 4.0), uplink_mb_s=(5.0, 6.0))  # fmt: skip
    d = cfg.to_dict()
    assert DSSyncRunConfig.from_dict(d) == cfg.validate() and cfg.scheme_name == "gossip"
    with pytest.raises(ValueError, match="scheme"):
        DSSyncRunConfig(base=base, scheme="ring").validate()
    with pytest.raises(ValueError, match="racks cover 3"):
        DSSyncRunConfig(base=base, racks=((0, 1, 2),)).validate()
    with pytest.raises(ValueError, match="uplink_mb_s needs 2"):
        DSSyncRunConfig(base=base, racks=((0, 1), (2, 3)), uplink_mb_s=(1.0,)).validate()


def _cli(argv: list[str], scheme: str) -> DSSyncRunConfig:
    import argparse

    from fl_r2sp.cluster.runtime.dssync import cli as dssync_cli

    parser = argparse.ArgumentParser()
    dssync_cli.add_flags(parser.add_argument_group())
    ns = parser.parse_args(argv)
    ns.scheme = scheme
    given = frozenset(a.lstrip("-").replace("-", "_") for a in argv if a.startswith("--"))
    base = ClusterConfig(workers=8, model="mlp", dataset="synthetic")
    return dssync_cli.build(ns, base, given).validate()


def test_cli_builds_a_scenario_and_refuses_misplaced_flags() -> None:
    cfg = _cli(["--scenario", "S2", "--link-rate", "8", "--regroup-period", "50"], "dssync")
    assert cfg.racks == RACKS and cfg.uplink_mb_s == (4.0, 4.0) and cfg.params.period == 50
    cfg = _cli(["--racks", "0,1,2/3,4,5,6,7", "--uplink-caps", "1,2"], "hierarchical")
    assert cfg.racks == ((0, 1, 2), (3, 4, 5, 6, 7)) and cfg.uplink_mb_s == (1.0, 2.0)
    with pytest.raises(ValueError, match="--slowness applies to --scheme dssync"):
        _cli(["--slowness", "2"], "gossip")
    with pytest.raises(ValueError, match="not both"):
        _cli(["--scenario", "S1", "--link-rate", "8", "--racks", "0/1,2,3,4,5,6,7"], "dssync")


def test_the_cluster_command_line_starts_the_dssync_family() -> None:
    from fl_r2sp.cluster.cli import parse

    cfg, _ = parse(["--scheme", "gossip", "--workers", "4", "--model", "mlp", "--dataset",
                    "synthetic", "--scenario", "S3", "--link-rate", "10"])  # fmt: skip
    assert isinstance(cfg, DSSyncRunConfig) and cfg.scheme == "gossip"
    assert cfg.racks == ((0, 1), (2, 3)) and cfg.nic_mb_s == (10.0,) * 4
    assert CLUSTER_SCHEMES[cfg.scheme_name].family.read(cfg.to_dict()) == cfg
    with pytest.raises(SystemExit) as exc:  # a parameter-server flag with a DS-Sync scheme
        parse(["--scheme", "dssync", "--servers", "2"])
    assert exc.value.code == 2

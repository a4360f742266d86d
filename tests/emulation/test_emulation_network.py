"""Fluid network: hand-computed completion times in virtual seconds."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.emulation.network import Network, pull_links, push_links, star_network
from fl_r2sp.emulation.profiles import get_profile

#: Relative tolerance on virtual times (rounding of remaining -= rate * dt only).
TIME_RTOL = 1e-9


def _line(*caps: float, discipline: str = "fair") -> Network:
    """Network with a shared link 's' (first cap) and client links 'l1', 'l2', ..."""
    net = Network(record=True)
    net.add_link("s", caps[0], discipline)  # type: ignore[arg-type]
    for i, cap in enumerate(caps[1:], 1):
        net.add_link(f"l{i}", cap)
    return net


def _run_all(net: Network) -> dict[int, float]:
    done = dict(net.advance(1e9))
    assert net.in_flight() == 0
    return done


def test_one_flow_alone_takes_size_over_bottleneck() -> None:
    net = _line(8.0, 5.0)
    fid = net.start_flow(0.0, 10.0, ["s", "l1"])
    assert net.next_completion() == (pytest.approx(2.0, rel=TIME_RTOL), fid)
    assert net.uncontended_time(10.0, ["s", "l1"]) == pytest.approx(2.0)
    assert _run_all(net)[fid] == pytest.approx(2.0, rel=TIME_RTOL)


@pytest.mark.parametrize("n", [1, 2, 7, 96])
def test_n_equal_flows_finish_together_at_n_times_single(n: int) -> None:
    net = star_network(n, get_profile("paper-ec2"))
    size = 0.25e6
    single = size / 8.3e6
    for i in range(n):
        net.start_flow(0.0, size, pull_links(i))
    done = _run_all(net)
    assert sorted(done) == list(range(n))
    assert all(t == pytest.approx(n * single, rel=TIME_RTOL) for t in done.values())


def test_staggered_start_shares_from_arrival() -> None:
    # A (2 bytes) alone at rate 1 on [0,1]; then both at 1/2: A ends at 3;
    # B has 1 byte left at t=3 and finishes alone at 4.
    net = _line(1.0)
    a = net.start_flow(0.0, 2.0, ["s"])
    assert net.advance(1.0) == []
    b = net.start_flow(1.0, 2.0, ["s"])
    done = net.advance(10.0)
    assert [fid for fid, _ in done] == [a, b]
    assert dict(done)[a] == pytest.approx(3.0, rel=TIME_RTOL)
    assert dict(done)[b] == pytest.approx(4.0, rel=TIME_RTOL)


def test_client_caps_below_fair_share_and_redistribution() -> None:
    # Shared 9, caps 1, 5, 100. Fair share 3 > cap 1 -> flow 1 at 1, others (9-1)/2 = 4.
    # Flow 3 (4 bytes) ends at t=1; flow 2 then gets min(5, 9-1) = 5: 4 + 5 bytes by t=2.
    # Flow 1 (3 bytes at rate 1) ends at t=3.
    net = _line(9.0, 1.0, 5.0, 100.0)
    f1 = net.start_flow(0.0, 3.0, ["s", "l1"])
    f2 = net.start_flow(0.0, 9.0, ["s", "l2"])
    f3 = net.start_flow(0.0, 4.0, ["s", "l3"])
    done = net.advance(10.0)
    assert [fid for fid, _ in done] == [f3, f2, f1]
    assert [t for _, t in done] == pytest.approx([1.0, 2.0, 3.0], rel=TIME_RTOL)


@pytest.mark.parametrize("n", [1, 3, 10])
def test_fcfs_link_serves_one_at_a_time(n: int) -> None:
    size, cap = 4.0, 2.0
    net = _line(cap, 100.0, discipline="fcfs")
    fids = [net.start_flow(0.0, size, ["s", "l1"]) for _ in range(n)]
    done = net.advance(1e6)
    assert [fid for fid, _ in done] == fids
    assert [t for _, t in done] == pytest.approx(
        [k * size / cap for k in range(1, n + 1)], rel=TIME_RTOL
    )


def test_fcfs_head_is_capped_by_its_other_links() -> None:
    # The head flow is limited by its 1 B/s client link; the next flow waits anyway.
    net = _line(10.0, 1.0, 100.0, discipline="fcfs")
    a = net.start_flow(0.0, 2.0, ["s", "l1"])
    b = net.start_flow(0.0, 10.0, ["s", "l2"])
    done = dict(net.advance(100.0))
    assert done[a] == pytest.approx(2.0, rel=TIME_RTOL)
    assert done[b] == pytest.approx(3.0, rel=TIME_RTOL)


def test_pushes_and_pulls_do_not_slow_each_other() -> None:
    profile = get_profile("paper-ec2")
    net = star_network(2, profile)
    size = 1.0e6
    pull = net.start_flow(0.0, size, pull_links(0))
    push = net.start_flow(0.0, size, push_links(0))
    alone = size / profile.server_egress
    done = dict(net.advance(100.0))
    assert done[pull] == pytest.approx(alone, rel=TIME_RTOL)
    assert done[push] == pytest.approx(size / profile.server_ingress, rel=TIME_RTOL)


def test_bytes_are_conserved_on_the_shared_link() -> None:
    rng = np.random.default_rng(7)
    net = star_network(20, get_profile("paper-ec2"))
    sizes = rng.uniform(1e5, 1e6, 60)
    starts = np.sort(rng.uniform(0.0, 5.0, 60))
    for k, (t0, size) in enumerate(zip(starts, sizes, strict=True)):
        net.advance(float(t0))
        net.start_flow(float(t0), float(size), pull_links(k % 20))
    net.advance(100.0)
    _, carried = net.trace("server-egress", 0.5, 100.0)
    assert carried.sum() == pytest.approx(sizes.sum(), rel=1e-9)
    assert (carried <= 8.3e6 * 0.5 * (1 + 1e-9)).all()


def test_overhead_is_paid_once_before_bytes_move() -> None:
    net = _line(1.0)
    a = net.start_flow(0.0, 2.0, ["s"], overhead=0.5)
    assert _run_all(net)[a] == pytest.approx(2.5, rel=TIME_RTOL)
    net2 = _line(1.0)
    # Two flows, both 1 byte with overhead 1: they start moving at t=1 at rate 1/2.
    fids = [net2.start_flow(0.0, 1.0, ["s"], overhead=1.0) for _ in range(2)]
    done = _run_all(net2)
    assert [done[f] for f in fids] == pytest.approx([3.0, 3.0], rel=TIME_RTOL)


def test_next_completion_accounts_for_flows_in_overhead() -> None:
    # A (2 bytes) alone until t=1, when B (1 byte, overhead 1) starts moving:
    # both at 1/2, both end at 3 (A alone would end at 2).
    net = _line(1.0)
    a = net.start_flow(0.0, 2.0, ["s"])
    b = net.start_flow(0.0, 1.0, ["s"], overhead=1.0)
    assert net.next_completion() == (pytest.approx(3.0, rel=TIME_RTOL), a)
    assert net.advance(2.9) == []
    done = net.advance(3.0)
    assert [fid for fid, _ in done] == [a, b]


def test_zero_size_flow_completes_after_overhead() -> None:
    net = _line(1.0)
    a = net.start_flow(0.0, 0.0, ["s"], overhead=0.25)
    b = net.start_flow(0.0, 0.0, ["s"])
    assert net.advance(0.0) == [(b, 0.0)]
    assert net.advance(1.0) == [(a, pytest.approx(0.25))]


def test_cancel_frees_bandwidth_and_records_end() -> None:
    net = _line(1.0)
    a = net.start_flow(0.0, 2.0, ["s"], tag="pull")
    b = net.start_flow(0.0, 2.0, ["s"])
    net.advance(1.0)
    net.cancel_flow(a)
    info = net.flow_info(a)
    assert info.cancelled and info.end == 1.0 and info.tag == "pull"
    # B has 1.5 bytes left at full rate 1.
    assert net.advance(10.0) == [(b, pytest.approx(2.5, rel=TIME_RTOL))]


def test_start_flow_after_unreported_completion_reports_it_later() -> None:
    net = _line(1.0)
    a = net.start_flow(0.0, 1.0, ["s"])
    b = net.start_flow(5.0, 1.0, ["s"])  # jumps past a's completion at t=1
    assert net.next_completion() == (pytest.approx(1.0), a)
    done = net.advance(10.0)
    assert done == [(a, pytest.approx(1.0)), (b, pytest.approx(6.0))]


def test_concurrency_step_function() -> None:
    net = _line(1.0)
    net.start_flow(0.0, 1.0, ["s"])
    net.start_flow(0.0, 1.0, ["s"])
    net.advance(0.5)
    net.start_flow(0.5, 0.5, ["s"])
    net.advance(100.0)
    times, counts = net.concurrency("s")
    # At 0.5 the first two have 0.75 left, the third 0.5; at 1/3 each the third
    # ends at 0.5 + 1.5 = 2.0; the others' last 0.25 at 1/2 each end at 2.5.
    assert times.tolist() == pytest.approx([0.0, 0.5, 2.0, 2.5])
    assert counts.tolist() == [2, 3, 2, 0]


def test_bad_inputs_raise_clear_errors() -> None:
    net = Network()
    with pytest.raises(ValueError, match="capacity"):
        net.add_link("x", 0.0)
    with pytest.raises(ValueError, match="capacity"):
        net.add_link("x", -5.0)
    with pytest.raises(ValueError, match="discipline"):
        net.add_link("x", 1.0, "lifo")  # type: ignore[arg-type]
    net.add_link("x", 1.0)
    with pytest.raises(ValueError, match="already exists"):
        net.add_link("x", 1.0)
    with pytest.raises(ValueError, match="size"):
        net.start_flow(0.0, -1.0, ["x"])
    with pytest.raises(ValueError, match="overhead"):
        net.start_flow(0.0, 1.0, ["x"], overhead=-0.1)
    with pytest.raises(ValueError, match="unknown link"):
        net.start_flow(0.0, 1.0, ["y"])
    with pytest.raises(ValueError, match="non-empty"):
        net.start_flow(0.0, 1.0, [])
    net.advance(2.0)
    with pytest.raises(ValueError, match="already at"):
        net.start_flow(1.0, 1.0, ["x"])
    with pytest.raises(ValueError, match="not recorded"):
        net.trace("x", 1.0, 2.0)
    with pytest.raises(KeyError, match="unknown flow"):
        net.flow_info(42)
    with pytest.raises(ValueError, match="at least 1 client"):
        star_network(0, get_profile("lan"))


def test_trace_integrates_rates_exactly_per_bin() -> None:
    # 3 bytes at rate 1 from t=0.5 to 3.5: bins of 1 s carry 0.5, 1, 1, 0.5.
    net = _line(1.0)
    net.advance(0.5)
    net.start_flow(0.5, 3.0, ["s"])
    net.advance(10.0)
    times, carried = net.trace("s", 1.0, 5.0)
    assert times.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert carried.tolist() == pytest.approx([0.5, 1.0, 1.0, 0.5, 0.0], rel=TIME_RTOL)


def test_fcfs_order_is_arrival_after_overhead() -> None:
    # A starts first but pays 1 s overhead; B (no overhead) reaches the fcfs link
    # first and is served first: B ends at 2, A moves from 2 to 4.
    net = _line(1.0, discipline="fcfs")
    a = net.start_flow(0.0, 2.0, ["s"], overhead=1.0)
    b = net.start_flow(0.0, 2.0, ["s"])
    assert net.next_completion() == (pytest.approx(2.0), b)
    assert net.advance(10.0) == [(b, pytest.approx(2.0)), (a, pytest.approx(4.0))]


def test_forgotten_flows_stay_readable_until_next_advance() -> None:
    net = Network(keep_finished=False)
    net.add_link("s", 1.0)
    a = net.start_flow(0.0, 1.0, ["s"], tag="x")
    assert net.advance(5.0) == [(a, pytest.approx(1.0))]
    assert net.flow_info(a).end == pytest.approx(1.0) and net.flow_info(a).tag == "x"
    net.advance(6.0)
    with pytest.raises(KeyError, match="keep_finished=False"):
        net.flow_info(a)

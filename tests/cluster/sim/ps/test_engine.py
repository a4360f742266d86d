"""The virtual-time twin: network arithmetic, scheme invariants, paper Fig. 9 shape."""

from __future__ import annotations

import math

import pytest

from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.schemes import scheme_params
from fl_r2sp.cluster.sim import ROW_FIELDS, TwinSpec, simulate

MB = 1e6


def spec(scheme: str | PSParams, n: int = 4, **kw) -> TwinSpec:
    params = scheme_params(scheme) if isinstance(scheme, str) else scheme
    base = dict(
        params=params,
        num_workers=n,
        num_servers=1,
        model_bytes=10 * MB,
        batch_size=100,
        iterations=10,
        speeds=(100.0,),
        server_bandwidth=100 * MB,
    )
    base.update(kw)
    return TwinSpec(**base)


def rows_of(res, w):
    return [r for r in res.rows if r["worker"] == w]


def test_network_times_hand_computed():
    # 2 workers pull 100 MB each through one 100 MB/s PS link: 200 MB / 100 MB/s = 2 s
    res = simulate(
        spec("asp", 2, model_bytes=100 * MB, iterations=1, compute_times={0: [0.5], 1: [0.5]})
    )
    r0, r1 = rows_of(res, 0)[0], rows_of(res, 1)[0]
    assert set(r0) == set(ROW_FIELDS)
    assert (r0["pull_s"], r1["pull_s"]) == (2.0, 2.0)
    assert r0["compute_s"] == 0.5 and r0["push_s"] == 2.0 and r0["t_end"] == 4.5
    # one worker, 2 shards of 100 MB/s, its own link 100 MB/s: the worker link binds, 1 s each way
    res = simulate(
        spec(
            "asp",
            1,
            num_servers=2,
            model_bytes=100 * MB,
            iterations=1,
            worker_bandwidth=100 * MB,
            compute_times={0: [0.0]},
        )
    )
    r = res.rows[0]
    assert (r["pull_s"], r["push_s"]) == (1.0, 1.0)
    assert sorted(a[3] for a in res.ps_arrivals) == [2.0, 2.0]


def test_asp_grants_at_every_push():
    res = simulate(spec("asp", 3, speeds=(100.0, 200.0, 300.0), iterations=5))
    grants = {(p["worker"], p["iteration"]): p["at"] for p in res.permissions()}
    for r in res.rows:
        if (r["worker"], r["iteration"] + 1) in grants:
            assert grants[(r["worker"], r["iteration"] + 1)] == r["t_end"]
    assert all(r["blocking_s"] == 0.0 for r in res.rows)


def test_bsp_barrier_in_twin():
    res = simulate(spec("bsp", 3, speeds=(100.0, 50.0, 200.0), iterations=4))
    for k in range(1, 4):
        ats = {p["at"] for p in res.permissions() if p["iteration"] == k}
        last_push = max(r["t_end"] for r in res.rows if r["iteration"] == k - 1)
        assert ats == {last_push}
    assert all(r["staleness"] == 0 for r in res.rows)


def test_ssp_never_exceeds_bound_with_a_3x_slower_worker():
    res = simulate(spec("ssp", 3, speeds=(300.0, 300.0, 100.0), model_bytes=1 * MB, iterations=20))
    gaps = [p["iteration"] - p["slowest"] for p in res.permissions() if "slowest" in p]
    assert max(gaps) == 5  # the bound binds, and is never exceeded
    # completed counts: the fast workers never finish more than s + 1 = 6 ahead
    events = sorted((r["t_end"], r["worker"]) for r in res.rows)
    done = dict.fromkeys(range(3), 0)
    for _, w in events:
        done[w] += 1
        assert max(done.values()) - min(done.values()) <= 6


@pytest.mark.parametrize("speeds", [(100.0,), (100.0, 80.0, 140.0, 120.0)])
def test_r2sp_round_robin_and_exact_gap(speeds):
    res = simulate(
        spec(
            scheme_params("r2sp", worker_gap_factor=0.8),
            4,
            speeds=speeds,
            jitter_cv=0.1,
            iterations=12,
            seed=3,
        )
    )
    perms = [p for p in res.permissions() if p["iteration"] >= 1]
    assert [p["worker"] for p in perms] == [i % 4 for i in range(len(perms))]
    for prev, cur in zip(perms, perms[1:], strict=False):
        assert cur["gap"] == 0.8 * cur["T"] / cur["n_live"]
        assert cur["at"] - prev["at"] >= cur["gap"]  # exact, no tolerance
    # heterogeneous: T follows the slowest worker's active time (max of per-worker EMAs)
    assert perms[-1]["T"] == perms[-1]["T_active"] > 0


def test_bsp_zero_gaps_and_r2sp_spreads_them():
    # 16 workers, 4 PS, network-bound (Fig. 9's shape): BSP's 16 pushes arrive together
    kw = dict(num_servers=4, model_bytes=100 * MB, speeds=(200.0,), iterations=40)
    bsp = simulate(spec("bsp", 16, **kw))
    n_gaps = 4 * (16 * 40 - 1)
    assert bsp.zero_gap_fraction() == pytest.approx(4 * 15 * 40 / n_gaps)  # ~15/16
    r2 = simulate(spec("r2sp", 16, **kw))
    # after the EMA forgot the all-at-once first iteration: no zero gaps, and the gaps sit
    # near 1/16 of the iteration span (Fig. 9: "almost all ... equal to 1/16")
    assert r2.zero_gap_fraction(skip=10) == 0.0
    sixteenth = r2.mean_iteration_time(skip=10) / 16
    gaps = r2.gaps(skip=10)
    assert ((gaps > 0.5 * sixteenth) & (gaps < 1.5 * sixteenth)).mean() > 0.9
    assert r2.mean_iteration_time(10) < 0.8 * bsp.mean_iteration_time(10)


def test_lost_worker_is_never_waited_for():
    for scheme in ("bsp", "ssp", "r2sp", "safa", "asp"):
        res = simulate(spec(scheme, 4, iterations=8, lost_at={1: 0.5}))
        assert res.completed[1] == 0
        assert all(res.completed[w] >= 8 for w in (0, 2, 3))
        if scheme == "r2sp":
            seq = [p["worker"] for p in res.permissions() if p["iteration"] >= 1]
            assert 1 not in seq and seq[:6] == [0, 2, 3, 0, 2, 3]


def test_deterministic_for_a_seed_and_scripted_times():
    a = simulate(spec("r2sp", 3, jitter_cv=0.2, seed=5))
    b = simulate(spec("r2sp", 3, jitter_cv=0.2, seed=5))
    c = simulate(spec("r2sp", 3, jitter_cv=0.2, seed=6))
    assert a.rows == b.rows and a.trace == b.trace
    assert a.rows != c.rows
    d = simulate(
        spec(
            "asp",
            2,
            iterations=3,
            compute_times={0: [0.1, 0.2], 1: [0.3]},
            iteration_delays=(0.0, 0.5),
        )
    )
    assert [r["compute_s"] for r in rows_of(d, 0)][:3] == pytest.approx([0.1, 0.2, 0.2])
    assert [r["compute_s"] for r in rows_of(d, 1)] == pytest.approx([0.8, 0.8, 0.8])


def test_tuning_in_twin_fills_fast_workers_idle_time():
    kw = dict(
        batch_size=512,
        speeds=(429.0, 429.0, 628.0, 628.0, 917.0, 917.0, 917.0, 917.0),
        num_servers=2,
        model_bytes=50 * MB,
        server_bandwidth=1000 * MB,
        iterations=30,
    )
    # All at once: with the probe start the equally slow worker 1 starts a turn after worker 0,
    # and worker 0 blocks behind it for a few iterations of the 5-iteration tuning warm-up.
    plain = simulate(spec(scheme_params("r2sp", t_seed="start"), 8, **kw))
    tuned = simulate(spec(scheme_params("r2sp", tuning="idle", t_seed="start"), 8, **kw))
    sizes = next(e for e in tuned.trace if e["event"] == "tune")["batch_sizes"]
    assert sizes["0"] == 512 < sizes["2"] < sizes["4"]
    fast_block = plain.mean("blocking_s", skip=10, worker=4)
    assert fast_block > 0.1
    assert tuned.mean("blocking_s", skip=10, worker=4) < 0.5 * fast_block


def test_spec_validation():
    with pytest.raises(ValueError, match="speeds"):
        simulate(spec("asp", 2, speeds=(1.0, 2.0, 3.0)))
    with pytest.raises(ValueError, match="server_bandwidth"):
        simulate(spec("asp", 2, server_bandwidth=0.0))
    with pytest.raises(ValueError, match="worker_gap_factor"):
        simulate(spec(scheme_params("r2sp", worker_gap_factor=2.0)))
    assert math.isnan(simulate(spec("asp", 1, iterations=1)).zero_gap_fraction())


def test_replay_of_the_twins_reports_gives_the_same_decisions():
    from fl_r2sp.cluster.policies.common.base import PushReport
    from fl_r2sp.cluster.sim.ps.replay import replay

    for p in (scheme_params("r2sp"), scheme_params("ssp", bound=1), scheme_params("bsp"),
              scheme_params("safa")):  # fmt: skip
        res = simulate(spec(p, 3, speeds=(100.0, 60.0, 140.0), jitter_cv=0.1, seed=2))
        reports = [
            PushReport(
                r["worker"],
                r["iteration"],
                r["t_end"],
                r["compute_s"],
                r["pull_s"] + r["push_s"],
                r["blocking_s"],
                r["batch_size"],
            )
            for r in sorted(res.rows, key=lambda r: (r["t_end"], r["worker"]))
        ]
        assert replay(p, 3, 100, reports) == res.trace


# Worker 0's iteration 1 lasts 10 s while workers 1 and 2 push twice (R²SP, r = 0, N = 3, all
# start at 0, transfers take no time): permissions (0,0) (1,0) (2,0) at 0, then (0,1) at 1,
# (1,1) at 2, (2,1) at 3; pushes arrive (0,0) 1, (1,0) 2, (1,1) 2.5, (2,0) 3, (2,1) 3.5, (0,1) 11.
OVERTAKEN = {0: [1.0, 10.0], 1: [2.0, 0.5], 2: [3.0, 0.5]}


def _ordered_twin(order: str, **kw):
    params = scheme_params("r2sp", worker_gap_factor=0.0, t_seed="start", push_order=order)
    return simulate(spec(params, 3, model_bytes=0.0, iterations=2, compute_times=OVERTAKEN, **kw))


def test_r2sp_pushes_in_arrival_order_exceed_the_staleness_bound():
    res = _ordered_twin("arrival")
    applied = [(r["worker"], r["iteration"]) for r in res.rows]
    assert applied == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (0, 1)]
    # Worker 0 pulled after (0,0) and meets (1,0), (1,1), (2,0), (2,1): 4 > N - 1 = 2.
    assert rows_of(res, 0)[1]["staleness"] == 4


def test_r2sp_pushes_in_permission_order_keep_staleness_within_n_minus_1():
    res = _ordered_twin("permission")
    applied = [(r["worker"], r["iteration"]) for r in res.rows]
    assert applied == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]  # permission order
    by_push = {(r["worker"], r["iteration"]): r["staleness"] for r in res.rows}
    # (0,1) pulled at version 1, meets (1,0) (2,0); (1,1) pulled at 2, meets (2,0) (0,1);
    # (2,1) pulled at 3, meets (0,1) (1,1).
    assert by_push == {(0, 0): 0, (1, 0): 1, (2, 0): 2, (0, 1): 2, (1, 1): 2, (2, 1): 2}
    # The waiting pushes' workers waited for worker 0's turn anyway: blocking is unchanged.
    blocking = {(r["worker"], r["iteration"]): r["blocking_s"] for r in res.rows}
    assert blocking == {(r["worker"], r["iteration"]): r["blocking_s"]
                        for r in _ordered_twin("arrival").rows}  # fmt: skip
    assert blocking[(1, 1)] == blocking[(2, 1)] == 0.0 and res.end_time == 11.0


def test_r2sp_permission_order_a_lost_worker_releases_the_waiting_pushes():
    res = _ordered_twin("permission", lost_at={0: 5.0})
    applied = [(r["worker"], r["iteration"]) for r in res.rows]
    assert applied == [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1)]  # released at 5, in order
    assert res.completed == {0: 1, 1: 2, 2: 2}
    assert res.end_time == 5.0

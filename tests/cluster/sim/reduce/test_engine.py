"""The all-reduce-family simulator: paper Fig. 3, analytic vs flow-level, workloads, losses."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.cluster.policies.reduce import (
    ReduceParams,
    ScriptedReduceController,
    ring_time,
)
from fl_r2sp.cluster.sim.reduce.engine import ReduceSim, run_reduce_sim
from fl_r2sp.cluster.sim.reduce.result import summarize_trials
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec
from fl_r2sp.cluster.sim.reduce.workload import (
    GBPS,
    ComputeModel,
    draw_bandwidths_gbps,
    load_trace_csv,
)
from fl_r2sp.emulation import rng_for

# Fig. 3: v = 5 units, bandwidths (1, 5, 1, 5, 1) units, ready at 1, 2, 3, 3, 13 s; sync time
# 2v/min b (the paper's approximation with alpha = 0). One unit = 1 Gbps = GBPS bytes/s.
FIG3_BW = (1.0, 5.0, 1.0, 5.0, 1.0)
FIG3_READY = (1.0, 2.0, 3.0, 3.0, 13.0)


class Oracle:
    """A controller that "is aware" of when workers will be ready (the Fig. 3 premise)."""

    def observe(self, compute_s):
        pass

    def probabilities(self, workers, elapsed, dt):
        return np.array(
            [1.0 if FIG3_READY[w] <= e + dt else 0.0 for w, e in zip(workers, elapsed, strict=True)]
        )


def fig3_spec(params: ReduceParams, **kw) -> ReduceSimSpec:
    return ReduceSimSpec(
        params=params,
        num_workers=5,
        duration_s=30.0,
        model_bytes=5 * GBPS,
        alpha_s=0.0,
        bandwidth_gbps=FIG3_BW,
        compute_script={w: [t, 1000.0] for w, t in enumerate(FIG3_READY)},
        approx_time=True,
        **kw,
    )


def ct_and_scale(result) -> tuple[float, float]:
    m = result.metrics()
    return round(m["sync_time_s"], 9), round(m["scale"], 9)


def scripted(script):
    ctl = ScriptedReduceController(ReduceParams("partial"), [1.0] * 5, script)
    return ReduceSim(fig3_spec(ReduceParams("partial")), controller=ctl).run()


def test_fig3_five_schedules():
    allreduce = run_reduce_sim(fig3_spec(ReduceParams("allreduce")))
    partial = run_reduce_sim(fig3_spec(ReduceParams("partial", p=2)))
    progress_aware = scripted([(3.0, [0, 1, 2, 3])])  # (d): wait 1 s, sync all four at 3 s
    bandwidth_aware = scripted([(3.0, [0, 2]), (3.0, [1, 3])])  # (e): pairs by bandwidth
    selective = run_reduce_sim(
        fig3_spec(
            ReduceParams("selective", p=2, eta=0.3, theta=1.0, delta_t=1.0), progress=Oracle()
        )
    )
    assert ct_and_scale(allreduce) == (10.0, 5.0)
    assert allreduce.syncs[0]["start"] == 13.0 and allreduce.syncs[0]["end"] == 23.0
    assert ct_and_scale(partial) == (10.0, 2.0)
    assert [s["members"] for s in partial.syncs] == [(0, 1), (2, 3)]
    assert ct_and_scale(progress_aware) == (10.0, 4.0)
    assert ct_and_scale(bandwidth_aware) == (6.0, 2.0)
    # the selective controller itself: at 2 s it waits for w4, at 3 s BAG + BPAWR give (e)
    assert ct_and_scale(selective) == (6.0, 2.0)
    assert sorted(s["members"] for s in selective.syncs) == [(0, 2), (1, 3)]
    assert all(s["start"] == 3.0 for s in selective.syncs)
    assert [t["event"] for t in selective.trace][:3] == ["wait", "wait", "launch"]


def test_flow_level_ring_matches_the_formula_on_disjoint_groups():
    # two concurrent disjoint rings with different bottlenecks, alpha = 2 ms
    bw = (4.0, 8.0, 2.0, 10.0, 10.0, 3.0, 7.0)
    spec = ReduceSimSpec(
        params=ReduceParams("partial"),
        num_workers=7,
        duration_s=50.0,
        model_bytes=3e8,
        alpha_s=2e-3,
        bandwidth_gbps=bw,
        compute_script={w: [1.0, 1000.0] for w in range(7)},
        network="flow",
    )
    script = [(1.0, [0, 1, 2]), (1.0, [3, 4, 5, 6])]
    ctl = ScriptedReduceController(ReduceParams("partial"), [1.0] * 7, script)
    res = ReduceSim(spec, controller=ctl).run()
    assert len(res.syncs) == 2
    for s in res.syncs:
        m, bmin = len(s["members"]), min(bw[w] for w in s["members"]) * GBPS
        expected = 2 * (m - 1) * 2e-3 + 2 * (m - 1) / m * 3e8 / bmin  # hand formula
        assert s["end"] - s["start"] == pytest.approx(expected, rel=1e-9)
        assert expected == pytest.approx(ring_time(m, 3e8, bmin, 2e-3), rel=1e-12)


def test_analytic_and_flow_modes_agree_on_a_partial_reduce_trial():
    kw = dict(num_workers=12, duration_s=20.0, model_bytes=50e6, seed=3)
    a = run_reduce_sim(ReduceSimSpec(ReduceParams("partial"), **kw))
    f = run_reduce_sim(ReduceSimSpec(ReduceParams("partial"), network="flow", **kw))
    assert [s["members"] for s in a.syncs] == [s["members"] for s in f.syncs]
    np.testing.assert_allclose(
        [s["end"] for s in a.completed()], [s["end"] for s in f.completed()], rtol=1e-9
    )


def test_trials_are_deterministic_and_share_random_numbers():
    base = dict(num_workers=20, duration_s=30.0, seed=5)
    one = run_reduce_sim(ReduceSimSpec(ReduceParams("selective"), **base)).metrics()
    two = run_reduce_sim(ReduceSimSpec(ReduceParams("selective"), **base)).metrics()
    assert one == two
    p = run_reduce_sim(ReduceSimSpec(ReduceParams("partial"), **base))
    s = run_reduce_sim(ReduceSimSpec(ReduceParams("selective"), **base))
    np.testing.assert_array_equal(p.bandwidth_gbps, s.bandwidth_gbps)  # same draw per seed


def test_metrics_are_consistent():
    res = run_reduce_sim(
        ReduceSimSpec(ReduceParams("selective"), num_workers=20, duration_s=30.0, seed=2)
    )
    m = res.metrics()
    done = res.completed()
    assert m["total_syncs"] == len(done)
    assert m["total_iterations"] == sum(len(s["members"]) for s in done)
    assert m["total_iterations"] == res.iterations_per_worker().sum()
    assert m["scale"] == pytest.approx(m["total_iterations"] / m["total_syncs"])
    assert m["sync_time_wait_s"] >= m["sync_time_s"]
    assert all(len(s["members"]) >= 6 for s in done)  # p = 0.3 * 20
    assert 0 <= m["wasted_wait_s"] <= m["waited_s"]
    spread = summarize_trials([res, res])
    assert spread["scale"]["min"] == spread["scale"]["median"] == m["scale"]


def test_a_lost_worker_never_blocks_the_others():
    spec = ReduceSimSpec(
        ReduceParams("allreduce"), num_workers=6, duration_s=60.0, lost_at={2: 5.0}, seed=1
    )
    res = run_reduce_sim(spec)
    after = [s for s in res.completed() if s["start"] > 5.0]
    assert after and all(2 not in s["members"] for s in after)
    assert all(len(s["members"]) == 5 for s in after)


def test_bandwidth_draw_and_compute_models(tmp_path):
    gbps = draw_bandwidths_gbps(1000, 0.05, rng_for(0, 1))
    assert gbps.min() >= 1.0 and gbps.max() <= 20.0
    np.testing.assert_array_equal(gbps, np.round(gbps, 3))
    for trace, mean in (("cnn", 0.316), ("transformer", 0.305)):
        draws = ComputeModel(trace).draw(rng_for(0, 2), 20000)
        assert draws.min() > 0 and draws.mean() == pytest.approx(mean, rel=0.03)
    path = tmp_path / "trace.csv"
    path.write_text("step,compute_s\n0,0.5\n1,0.25\n")
    assert load_trace_csv(path, "compute_s") == (0.5, 0.25)
    model = ComputeModel(samples=load_trace_csv(path, "compute_s"))
    assert set(model.draw(rng_for(0, 3), 50).tolist()) <= {0.5, 0.25}
    with pytest.raises(ValueError, match="no column"):
        load_trace_csv(path, "time")


def test_spec_validation():
    with pytest.raises(ValueError, match="network"):
        ReduceSimSpec(ReduceParams("partial"), network="packet").validate()
    with pytest.raises(ValueError, match="out of range"):
        ReduceSimSpec(ReduceParams("partial"), num_workers=2, lost_at={5: 1.0}).validate()
    with pytest.raises(ValueError, match="bandwidth_gbps"):
        ReduceSimSpec(ReduceParams("partial"), num_workers=2, bandwidth_gbps=(1.0,)).validate()


def test_compute_scale_multiplies_the_drawn_times():
    base = dict(num_workers=3, duration_s=30.0, seed=4)
    one = run_reduce_sim(ReduceSimSpec(ReduceParams("allreduce"), **base))
    three = run_reduce_sim(ReduceSimSpec(ReduceParams("allreduce"), compute_scale=3.0, **base))
    # the first all-reduce starts when the slowest first round ends: 3x later, same draws
    assert three.syncs[0]["start"] == pytest.approx(3 * one.syncs[0]["start"], rel=1e-12)


@pytest.mark.parametrize(
    "params,kw",
    [
        (ReduceParams("selective", reading="literal"), {}),
        (ReduceParams("selective", reading="literal", full_sync_every=3), {}),
        (ReduceParams("selective", hazard="conditional"), {"start": "cold"}),
        (ReduceParams("selective", full_sync_every=3), {"bw_error": 0.3}),
    ],
)
def test_selective_variants_keep_training(params, kw):
    res = run_reduce_sim(ReduceSimSpec(params, num_workers=20, duration_s=30.0, seed=1, **kw))
    m = res.metrics()
    assert m["total_syncs"] >= 3  # no stall: syncs keep completing
    if params.full_sync_every is not None:
        assert m["full_syncs"] >= 1 and res.syncs[0]["full"]  # k = 0: the first sync is full

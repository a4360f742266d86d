"""The event-driven server loops: hand-computed virtual times, determinism, robustness."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.fl.clients.runtime import runtime_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.transport import InProcessTransport

#: Virtual-time tolerance: transfers on the `lan` profile take ~1e-7 s.
VT_TOL = 1e-5
#: The digits MLP on the paper-ec2/lan profiles: seconds per local iteration.
MLP_ITER_S = 0.066


def timing_cfg(**kw) -> RunConfig:
    base = dict(
        timing_only=True,
        network="lan",
        delay="constant(value=0.1)",
        local_iterations=10,
        num_partitions=4,
        max_updates=4,
        eval_every=1,
        plots=False,
    )
    base.update(kw)
    return RunConfig(**base)


def apply_times(out) -> list[tuple[float, int]]:
    return [(r["time"], r["group"]) for r in out.events.of_kind("group_apply")]


def test_bsp_rounds_take_compute_plus_delay() -> None:
    out = run(timing_cfg(strategy="bsp", fraction=1.0), write=False, progress=False)
    cycle = 10 * MLP_ITER_S + 0.1
    times = [t for t, _ in apply_times(out)]
    assert times == pytest.approx([cycle * k for k in range(1, 5)], abs=VT_TOL)


def test_flr2sp_second_group_waits_for_the_gap() -> None:
    out = run(
        timing_cfg(strategy="fl-r2sp", num_groups=2, fraction=1.0), write=False, progress=False
    )
    cycle = 10 * MLP_ITER_S + 0.1
    (t0, g0), (t1, g1) = apply_times(out)[:2]
    # Group 0 applies as soon as it collected (T = 0: no gap yet); T becomes the
    # measured round time, so group 1 waits T/M after group 0's application.
    assert (g0, g1) == (0, 1)
    assert t0 == pytest.approx(cycle, abs=VT_TOL)
    assert t1 == pytest.approx(cycle + cycle / 2, abs=VT_TOL)


def test_real_arrival_order_does_not_change_the_result() -> None:
    cfg = RunConfig(
        num_partitions=8, num_groups=2, local_iterations=3, max_updates=6, eval_every=3, plots=False
    )
    runtime = runtime_for(cfg)
    outs = []
    for shuffle in (None, 1, 2):
        transport = InProcessTransport(range(8), runtime.run, shuffle_seed=shuffle)
        outs.append(run(cfg, transport=transport, write=False, progress=False))
    for other in outs[1:]:
        assert np.array_equal(outs[0].weights, other.weights)
        assert apply_times(outs[0]) == apply_times(other)


def test_bad_clients_are_rejected_and_the_run_goes_on() -> None:
    cfg = RunConfig(
        num_partitions=6,
        num_groups=2,
        local_iterations=2,
        max_updates=6,
        eval_every=6,
        plots=False,
        max_failures=2,
    )
    runtime = runtime_for(cfg)

    def flaky(job: Job) -> Reply:
        reply = runtime.run(job)
        if job.cid == 1 and job.index == 0:
            return Reply(**{**reply.__dict__, "weights": np.full_like(reply.weights, np.nan)})
        if job.cid == 2 and job.index == 1:
            return Reply(**{**reply.__dict__, "weights": reply.weights[:-3]})
        if job.cid == 3:
            raise RuntimeError("ClientApp crashed")
        return reply

    out = run(cfg, transport=InProcessTransport(range(6), flaky), write=False, progress=False)
    assert out.summary["global_updates"] == 6
    assert np.all(np.isfinite(out.weights))
    failed = {(r["cid"], r["job"]): r["failed"] for r in out.events.jobs if r.get("failed")}
    assert "non-finite" in failed[(1, 0)]
    assert "wrong shape" in failed[(2, 1)]
    assert "ClientApp crashed" in failed[(3, 0)]
    assert 3 in out.summary["policy_dropped"]


def test_dropouts_fail_jobs_without_stalling() -> None:
    cfg = timing_cfg(
        strategy="fl-r2sp",
        num_groups=2,
        num_partitions=8,
        max_updates=12,
        dropout="bernoulli(p=0.3,down=2)",
    )
    out = run(cfg, write=False, progress=False)
    assert out.summary["global_updates"] == 12
    assert any("offline" in str(r.get("failed", "")) for r in out.events.jobs)


def test_virtual_runs_repeat_exactly() -> None:
    cfg = timing_cfg(
        strategy="fl-r2sp",
        num_groups=2,
        num_partitions=8,
        max_updates=8,
        network="paper-ec2",
        delay="lognormal(mu=-2,sigma=1)",
    )
    a = run(cfg, write=False, progress=False)
    b = run(cfg, write=False, progress=False)
    assert apply_times(a) == apply_times(b)
    assert a.summary["avg_pull_s"] == b.summary["avg_pull_s"]


def test_wall_clock_loop_runs_in_real_time() -> None:
    cfg = timing_cfg(
        strategy="fl-r2sp", clock="wall", num_groups=2, delay="constant(value=0.01)", max_updates=4
    )
    out = run(cfg, write=False, progress=False)
    assert out.summary["global_updates"] == 4
    assert out.summary["clock"] == "wall"
    assert out.history[-1]["time"] > 0.02  # two group rounds of 0.01 s sleeps at least


def test_run_writes_a_complete_run_directory(tmp_path) -> None:
    cfg = timing_cfg(strategy="bsp", run_dir=str(tmp_path), plots=True, network="paper-ec2")
    out = run(cfg, progress=False, run_name="r")
    names = {p.name for p in (tmp_path / "r").iterdir()}
    assert {
        "config.json",
        "summary.json",
        "history.csv",
        "jobs.csv",
        "records.jsonl",
        "weights.npy",
        "trace-server-egress.csv",
    } <= names
    assert out.run_dir == tmp_path / "r"


def test_fedavg_is_refused_by_the_event_driven_runner() -> None:
    with pytest.raises(ValueError, match="flwr run"):
        run(timing_cfg(strategy="fedavg"), write=False, progress=False)


def test_time_budget_stop_evaluates_the_final_model() -> None:
    cfg = timing_cfg(strategy="bsp", fraction=1.0, max_updates=0, time_budget=2.0, eval_every=100)
    out = run(cfg, write=False, progress=False)
    cycle = 10 * MLP_ITER_S + 0.1
    assert out.summary["stopped"].startswith("time budget")
    assert out.summary["global_updates"] == int(2.0 // cycle)
    assert out.history[-1]["version"] == out.summary["global_updates"]

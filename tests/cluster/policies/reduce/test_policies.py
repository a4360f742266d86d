"""All-reduce-family controllers: BAG, BPAWR, progress models, ring time, weights, contract."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fl_r2sp.cluster.policies.reduce import (
    BpawrConfig,
    EmpiricalProgress,
    ReduceParams,
    bag,
    bpawr,
    make_reduce_controller,
    member_weights,
    ring_time,
    weighted_ring_allreduce,
)


class FixedProgress:
    """Hand-set probability per worker (tests only)."""

    def __init__(self, probs: dict[int, float]) -> None:
        self.probs = probs

    def observe(self, compute_s: float) -> None:
        pass

    def probabilities(self, workers, elapsed, dt):
        return np.array([self.probs.get(int(w), 0.0) for w in workers])


# -- BAG ------------------------------------------------------------------------------------
def test_bag_fig3_consistent_and_literal():
    # paper Fig. 3: b1 = b3 = 1, b2 = b4 = 5 (workers 0..3), p = 2, eta = 0.3
    assert bag([0, 1, 2, 3], [1, 5, 1, 5], 2, 0.3) == [[1, 3], [0, 2]]
    # printed `len(g) <= p`: base of 3, threshold 0.7 from w1, w3 joins -> one group of four
    assert bag([0, 1, 2, 3], [1, 5, 1, 5], 2, 0.3, strict=False, reset_threshold=False) == [
        [1, 3, 0, 2]
    ]


def test_bag_extension_stops_at_first_worker_below_threshold():
    # base [10, 9] -> b* = 0.7 * 9 = 6.3; 8 and 7.5 join, 5 opens the next group
    bws = [10, 9, 8, 7.5, 5, 4]
    assert bag(list(range(6)), bws, 2, 0.3) == [[0, 1, 2, 3], [4, 5]]
    # eta = 0: groups of exactly p in bandwidth order (ties would still extend)
    assert bag(list(range(6)), bws, 2, 0.0) == [[0, 1], [2, 3], [4, 5]]


def test_bag_threshold_reset_matters_for_p1():
    bws = [10, 5, 4.5]  # eta 0.2: thresholds 8, then 4 if reset
    assert bag([0, 1, 2], bws, 1, 0.2) == [[0], [1, 2]]
    assert bag([0, 1, 2], bws, 1, 0.2, reset_threshold=False) == [[0], [1], [2]]


def test_bag_ties_real_before_virtual_and_small_queue():
    # equal bandwidths: real workers first (in id order), then the virtual one; a tie extends
    assert bag([-1, 4, 2], [5.0, 5.0, 5.0], 2, 0.0) == [[2, 4, -1]]
    assert bag([-1, 4, 2], [5.0, 5.0, 4.0], 1, 0.0) == [[4, -1], [2]]
    assert bag([7], [3.0], 2, 0.3) == [[7]]  # fewer than p: one short group
    with pytest.raises(ValueError, match="duplicate"):
        bag([1, 1], [1.0, 2.0], 1, 0.3)
    with pytest.raises(ValueError, match="eta"):
        bag([1], [1.0], 1, 1.0)


# -- progress models ----------------------------------------------------------------------
def test_empirical_progress_paper_vs_conditional():
    samples = [1.0, 2.0, 3.0, 4.0]
    w = np.array([0, 1])
    paper = EmpiricalProgress(samples, "paper", 1)
    cond = EmpiricalProgress(samples, "conditional", 1)
    # elapsed 1.5, dt 1: F(2.5) = 0.5; conditional (0.5 - 0.25) / 0.75 = 1/3
    # elapsed 4.5: F = 1 either way (overdue worker: conditional taken as 1)
    assert paper.probabilities(w, np.array([1.5, 4.5]), 1.0).tolist() == [0.5, 1.0]
    np.testing.assert_allclose(cond.probabilities(w, np.array([1.5, 4.5]), 1.0), [1 / 3, 1.0])


def test_cold_progress_predicts_nothing_before_min_samples():
    cold = EmpiricalProgress(None, "paper", min_samples=3)
    cold.observe(1.0)
    cold.observe(1.0)
    assert cold.probabilities(np.array([0]), np.array([5.0]), 1.0).tolist() == [0.0]
    cold.observe(1.0)
    assert cold.probabilities(np.array([0]), np.array([5.0]), 1.0).tolist() == [1.0]


# -- BPAWR ----------------------------------------------------------------------------------
BW = np.array([10.0, 2.0, 10.0, 8.0, 1.0])  # bytes/s, worker id -> bandwidth
TRAINING = np.array([2, 3, 4])
ELAPSED = np.array([0.5, 0.5, 0.5])


def cfg(**kw):
    base = dict(p=2, eta=0.3, delta_t=1.0, theta=1.0, model_bytes=100.0, alpha=0.0)
    base.update(kw)
    return BpawrConfig(**base)


def test_bpawr_wait_and_replace_hand_computed():
    prog = FixedProgress({2: 0.7, 3: 0.6, 4: 0.9})
    res = bpawr([0, 1], BW, TRAINING, ELAPSED, cfg(), prog)
    # candidates: bandwidth > bottleneck 2 -> workers 2, 3 (worker 4 is slower)
    assert res.claimed.tolist() == [2, 3]
    assert res.expected == 1  # floor(0.7 + 0.6)
    b_bar = (0.7 * 10 + 0.6 * 8) / 1.3
    assert res.expected_bandwidth == pytest.approx(b_bar)
    # g* = [w0, virtual] (b* = 0.7 * b_bar = 6.35 > 2): w1 is replaced
    assert res.decision == "wait" and res.replace == (1,) and res.virtual_in_best == 1
    # T(g) = 2 * (1/2) * 100 / 2 = 50; T(g*) = 100 / b_bar
    assert res.saved_s == pytest.approx(50 - 100 / b_bar)


def test_bpawr_launch_hold_and_theta():
    prog = FixedProgress({2: 0.7, 3: 0.6})
    hold = bpawr([0], BW, TRAINING, ELAPSED, cfg(), prog)
    assert hold.decision == "hold" and hold.claimed.size == 0
    # saving 38.98 s is not worth it when theta * dt = 50
    assert bpawr([0, 1], BW, TRAINING, ELAPSED, cfg(theta=50.0), prog).decision == "launch"
    # nobody faster than the bottleneck: launch now
    fast = bpawr([0, 2], BW, np.array([3, 4]), ELAPSED[:2], cfg(), prog)
    assert fast.decision == "launch" and fast.claimed.tolist() == []
    # candidates but k = floor(0.3 + 0.3) = 0: nothing to wait for -> launch
    weak = bpawr([0, 1], BW, TRAINING, ELAPSED, cfg(), FixedProgress({2: 0.3, 3: 0.3}))
    assert weak.decision == "launch" and weak.expected == 0


@pytest.mark.parametrize(
    ("theta", "delta_t", "decision"), [(10.0, 5.0, "launch"), (50.0, 0.5, "wait")]
)
def test_bpawr_threshold_is_theta_times_delta_t(theta, delta_t, decision):
    """The saving (38.98 s) is compared with θ·Δt, not θ: Δt ≠ 1 here.

    θ·Δt = 50 > 38.98 -> launch although θ = 10 alone would wait; θ·Δt = 25 -> wait although
    θ = 50 alone would launch. Kills the mutation ``saved > cfg.theta``.
    """
    prog = FixedProgress({2: 0.7, 3: 0.6})  # probabilities independent of Δt
    assert bpawr([0, 1], BW, TRAINING, ELAPSED, cfg(theta=theta, delta_t=delta_t),
                 prog).decision == decision  # fmt: skip


def test_bpawr_literal_reading():
    prog = FixedProgress({2: 0.7, 3: 0.6})
    # printed BAG (base p + 1 = 3) keeps w1 with the virtual worker: nothing saved, F = False
    assert bpawr([0, 1], BW, TRAINING, ELAPSED, cfg(literal=True), prog).decision == "hold"
    # p = 1 (base 2): g* = [w0, virtual], F = True -> launch g without g_delta = {w1}
    lit = bpawr([0, 1], BW, TRAINING, ELAPSED, cfg(literal=True, p=1), prog)
    assert lit.decision == "launch" and lit.replace == (1,)
    # F = False (nothing to gain): the printed algorithm never launches this group
    none = bpawr([0, 2], BW, np.array([3, 4]), ELAPSED[:2], cfg(literal=True), prog)
    assert none.decision == "hold"


# -- ring time, weights, weighted all-reduce --------------------------------------------
def test_ring_time_hand_computed():
    # m = 4, v = 1e9 B, min b = 1.25e9 B/s (10 Gbps), alpha = 1 ms
    assert ring_time(4, 1e9, 1.25e9, 1e-3) == pytest.approx(2 * 3 * 1e-3 + 1.5 * 0.8)
    assert ring_time(4, 1e9, 1.25e9, 1e-3, approx=True) == pytest.approx(0.008 + 1.6)
    assert ring_time(1, 1e9, 1.0, 1.0) == 0.0
    with pytest.raises(ValueError):
        ring_time(0, 1.0, 1.0, 0.0)


def test_member_weights():
    assert member_weights([2, 1, 1]) == (0.5, 0.25, 0.25)
    assert member_weights([5, 1], "uniform") == (0.5, 0.5)
    with pytest.raises(ValueError):
        member_weights([0, 1])


@pytest.mark.parametrize("m,size", [(1, 7), (2, 10), (5, 1003), (6, 3)])
def test_weighted_ring_allreduce_is_the_weighted_mean(m, size):
    rng = np.random.default_rng(m)
    models = [rng.normal(size=size) for _ in range(m)]
    weights = rng.uniform(0.5, 3.0, m).tolist()
    expected = np.average(np.stack(models), axis=0, weights=weights)
    out = weighted_ring_allreduce(models, weights)
    assert len(out) == m
    for r in out:
        np.testing.assert_allclose(r, expected, rtol=0, atol=1e-6)


# -- params and the controller contract ------------------------------------------------
def test_params_validate_and_p():
    assert ReduceParams("partial").group_min(200) == 60
    assert ReduceParams("partial", p_fraction=0.01).group_min(40) == 2  # the floor
    assert ReduceParams("partial", p=7).group_min(5) == 5
    for bad in (
        dict(scheme="x"),
        dict(eta=1.0),
        dict(delta_t=0.0),
        dict(p=0),
        dict(reading="loose"),
        dict(full_sync_every=0),
        dict(hazard="h"),
    ):
        with pytest.raises(ValueError):
            ReduceParams(**{"scheme": "selective", **bad}).validate()


def test_partial_reduce_fifo_and_iteration_weights():
    ctl = make_reduce_controller(ReduceParams("partial", p=2), [1.0, 1.0, 1.0])
    ctl.start(0.0)
    assert ctl.on_ready(1, 1.0, 0, 1.0) == []
    (la,) = ctl.on_ready(0, 2.0, 0, 2.0)
    assert la.members == (1, 0) and la.weights == (0.5, 0.5) and la.at == 2.0
    assert ctl.on_done(la.group, 3.0) == []
    assert ctl.on_ready(0, 4.0, 1, 1.0) == []
    (lb,) = ctl.on_ready(2, 5.0, 0, 5.0)
    # worker 0 is in its 2nd iteration, worker 2 in its 1st: weights 2/3, 1/3
    assert lb.members == (0, 2) and lb.weights == pytest.approx((2 / 3, 1 / 3))
    with pytest.raises(ValueError, match="syncing"):
        ctl.on_ready(0, 6.0, 1, 1.0)
    with pytest.raises(ValueError, match="iteration"):
        ctl.on_ready(1, 6.0, 0, 1.0)
    with pytest.raises(ValueError, match="not in flight"):
        ctl.on_done(99, 6.0)


def test_allreduce_waits_for_all_and_a_loss_releases_it():
    ctl = make_reduce_controller(ReduceParams("allreduce"), [1.0] * 3)
    ctl.start(0.0)
    assert ctl.on_ready(0, 1.0, 0, 1.0) == [] and ctl.on_ready(2, 1.5, 0, 1.5) == []
    (la,) = ctl.on_worker_lost(1, 2.0)
    assert la.members == (0, 2)
    assert ctl.on_ready(1, 3.0, 0, 1.0) == []  # a lost worker's report is ignored
    assert ctl.trace[-1]["event"] == "ignored"


def test_partial_p_shrinks_with_losses():
    ctl = make_reduce_controller(ReduceParams("partial", p=3), [1.0] * 3)
    ctl.start(0.0)
    ctl.on_ready(0, 1.0, 0, 1.0)
    ctl.on_ready(1, 1.0, 0, 1.0)
    (la,) = ctl.on_worker_lost(2, 2.0)
    assert la.members == (0, 1)


def test_selective_waits_then_launches_with_the_fast_arrival():
    # workers 0 (10), 1 (2) ready; 2 (10) predicted within dt -> wait, re-evaluate at now + dt
    bw = [10.0, 2.0, 10.0, 1.0]
    prog = FixedProgress({2: 1.0})
    params = ReduceParams("selective", p=2, delta_t=0.5)
    ctl = make_reduce_controller(params, bw, model_bytes=100.0, alpha=0.0, progress=prog)
    ctl.start(0.0)
    assert ctl.on_ready(0, 1.0, 0, 1.0) == []
    assert ctl.on_ready(1, 1.2, 0, 1.2) == []
    assert ctl.next_deadline() == pytest.approx(1.7)
    assert ctl.trace[-1]["event"] == "wait" and ctl.trace[-1]["replace"] == [1]
    (la,) = ctl.on_ready(2, 1.4, 0, 1.4)
    # BAG: [0, 2] (b* = 7) then [1] (short, held)
    assert la.members == (0, 2) and la.waited_s == pytest.approx(0.2)
    assert ctl.queue == [1]
    # worker 2 joined after the wait began: the 0.2 s wait of worker 0 was not wasted
    assert ctl.stats["waited_member_s"] == pytest.approx(0.2)
    assert ctl.stats["wasted_member_s"] == 0.0


def test_selective_literal_stall_guard():
    # everybody ready, equal bandwidths: the printed rule never launches; the guard does
    params = ReduceParams("selective", p=2, reading="literal")
    ctl = make_reduce_controller(params, [5.0, 5.0], model_bytes=1.0, alpha=0.0)
    ctl.start(0.0)
    assert ctl.on_ready(0, 1.0, 0, 1.0) == []
    (la,) = ctl.on_ready(1, 1.0, 0, 1.0)
    assert la.members == (0, 1) and ctl.stats["stall_rescues"] == 1


def test_selective_full_sync_every_c():
    params = ReduceParams("selective", p=1, full_sync_every=2, theta=math.inf)
    ctl = make_reduce_controller(params, [1.0, 1.0], model_bytes=1.0, alpha=0.0)
    ctl.start(0.0)
    assert ctl.on_ready(0, 1.0, 0, 1.0) == []  # k = 0: a full sync is due, wait for all
    (full,) = ctl.on_ready(1, 2.0, 0, 1.0)
    assert full.full and full.members == (0, 1) and ctl.k == 1
    ctl.on_done(full.group, 3.0)
    (part,) = ctl.on_ready(0, 4.0, 1, 1.0)  # k = 1: partial (p = 1)
    assert not part.full and part.members == (0,) and ctl.k == 2


def test_wait_ledger_member_and_slot_readings():
    from fl_r2sp.cluster.policies.reduce.waits import WaitLedger

    ready_at = np.array([0.0, 0.5, 2.0, 0.2])
    led = WaitLedger()
    led.evaluation(1.0)
    led.wait([0, 1], 1.0)  # slot of 2 members opens at 1.0
    led.evaluation(1.1)  # a timeout with no arrival: slot wasted, 2 x 0.1
    led.wait([0, 1], 1.1)
    led.arrival()
    led.evaluation(2.0)  # worker 2 arrived: this slot is not wasted
    assert led.launch([0, 1, 2], ready_at, 2.0) == pytest.approx(1.0)
    # worker 2 became ready (2.0) after both were told to wait: joined, not wasted
    assert led.totals["waited_member_s"] == pytest.approx(2.0)
    assert led.totals["wasted_member_s"] == 0.0
    assert led.totals["wasted_slot_member_s"] == pytest.approx(0.2)
    led.wait([3], 2.0)
    assert led.launch([3, 1], ready_at, 2.5) == pytest.approx(0.5)  # nobody new joined
    assert led.totals["wasted_member_s"] == pytest.approx(0.5)
    assert led.totals["wait_decisions"] == 3

"""Cluster coordinator policies driven by hand-made reports (no network, no torch)."""

from __future__ import annotations

import math

import pytest

from fl_r2sp.cluster.policies.common.base import PushReport
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.policies.osp.params import OSPParams
from fl_r2sp.cluster.policies.ps.asp import ASPParams
from fl_r2sp.cluster.policies.ps.bsp import BSPParams
from fl_r2sp.cluster.policies.ps.r2sp import R2SPParams, R2SPPolicy
from fl_r2sp.cluster.policies.ps.safa import SAFAParams, SAFAPolicy
from fl_r2sp.cluster.policies.ps.ssp import SSPParams, SSPPolicy
from fl_r2sp.cluster.policies.ps.tuning import BatchTuner, idle_rule, proportional_rule


def rep(
    w: int,
    k: int,
    now: float,
    compute: float = 0.5,
    comm: float = 0.5,
    block: float = 0.0,
    batch: int = 8,
) -> PushReport:
    return PushReport(w, k, now, compute, comm, block, batch)


def perms(ps):  # (worker, iteration, at, batch) tuples
    return [(p.worker, p.iteration, p.at, p.batch_size) for p in ps]


# -- the scheme records --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("record", "words"),
    [
        (SSPParams(scheme="nope"), "not scheme 'nope'"),
        (OSPParams(scheme="r2sp"), "not scheme 'r2sp'"),
        (R2SPParams(worker_gap_factor=-0.1), "worker_gap_factor"),
        (R2SPParams(worker_gap_factor=1.5), "worker_gap_factor"),
        (R2SPParams(worker_gap_factor=math.nan), "worker_gap_factor"),
        (R2SPParams(ema_weight=0.0), "ema_weight"),
        (SSPParams(bound=-1), "ssp_bound"),
        (R2SPParams(tuning="magic"), "tuning"),
        (R2SPParams(t_measure="wall"), "t_measure"),
        (R2SPParams(t_seed="guess"), "t_seed"),
        (SAFAParams(quorum=0.0), "safa_quorum"),
        (SAFAParams(staleness_bound=-2), "safa_staleness_bound"),
        (SAFAParams(deadline_s=0.0), "safa_deadline_s"),
    ],
)
def test_records_reject_bad_knobs(record: PSParams, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        record.validate()


def test_record_defaults_and_batch_check() -> None:
    r = R2SPParams().validate()
    assert (r.scheme, r.worker_gap_factor, r.ema_weight, r.tuning, r.t_measure) == (
        "r2sp",
        0.8,
        0.1,
        "none",
        "active",
    )
    assert (SSPParams().bound, SAFAParams().quorum, OSPParams().cap) == (5, 0.5, 0.8)
    for record in (BSPParams(), ASPParams(), SSPParams(), r, SAFAParams(),
                   *(OSPParams(scheme=v) for v in ("osp", "osp-s", "osp-c"))):  # fmt: skip
        assert record.policy(2, 4).name == record.scheme
    with pytest.raises(ValueError, match="batch_size"):
        ASPParams().policy(2, 0)
    with pytest.raises(ValueError, match="num_workers"):
        ASPParams().policy(0, 4)


# -- ASP / BSP / SSP ----------------------------------------------------------------------
def test_asp_grants_every_request_at_once():
    p = ASPParams().policy(3, 8)
    assert perms(p.start(0.0)) == [(0, 0, 0.0, 8), (1, 0, 0.0, 8), (2, 0, 0.0, 8)]
    assert perms(p.on_push(rep(2, 0, 1.0))) == [(2, 1, 1.0, 8)]
    assert perms(p.on_push(rep(2, 1, 1.5))) == [(2, 2, 1.5, 8)]
    assert perms(p.on_push(rep(0, 0, 1.7))) == [(0, 1, 1.7, 8)]
    with pytest.raises(ValueError, match="expected 2"):
        p.on_push(rep(2, 1, 2.0))  # a duplicate push


def test_bsp_barrier_and_lost_worker():
    p = BSPParams().policy(3, 8)
    assert p.apply_mode == "barrier"
    p.start(0.0)
    assert p.on_push(rep(0, 0, 1.0)) == []
    assert p.on_push(rep(1, 0, 1.2)) == []
    assert perms(p.on_push(rep(2, 0, 1.5))) == [(0, 1, 1.5, 8), (1, 1, 1.5, 8), (2, 1, 1.5, 8)]
    assert p.on_push(rep(0, 1, 2.0)) == [] and p.on_push(rep(2, 1, 2.1)) == []
    # worker 1 dies: the barrier must not wait for it
    assert perms(p.on_worker_lost(1, 3.0)) == [(0, 2, 3.0, 8), (2, 2, 3.0, 8)]


def test_ssp_off_by_one_and_release():
    p = SSPPolicy(2, 8, SSPParams(bound=1))
    p.start(0.0)
    # w0 completed 1, slowest completed 0: starting iteration 1 gives 1 - 0 <= 1
    assert perms(p.on_push(rep(0, 0, 1.0))) == [(0, 1, 1.0, 8)]
    # starting iteration 2 would give 2 - 0 = 2 > 1: held
    assert p.on_push(rep(0, 1, 2.0)) == []
    # the slowest catches up: both proceed, in worker order
    assert perms(p.on_push(rep(1, 0, 3.0))) == [(0, 2, 3.0, 8), (1, 1, 3.0, 8)]
    # bound 0 is BSP's timing
    q = SSPPolicy(2, 8, SSPParams(bound=0))
    q.start(0.0)
    assert q.on_push(rep(0, 0, 1.0)) == []
    assert perms(q.on_push(rep(1, 0, 2.0))) == [(0, 1, 2.0, 8), (1, 1, 2.0, 8)]
    # a lost slowest worker releases the held one
    assert q.on_push(rep(0, 1, 3.0)) == []
    assert perms(q.on_worker_lost(1, 4.0)) == [(0, 2, 4.0, 8)]


# -- R²SP ---------------------------------------------------------------------------------
def test_r2sp_round_robin_and_gap_hand_computed():
    p = R2SPPolicy(3, 8, R2SPParams(worker_gap_factor=0.8, ema_weight=0.1, t_seed="start"))
    p.start(0.0)
    # worker 2 asks first but it is worker 0's turn
    assert p.on_push(rep(2, 0, 0.9, compute=0.4, comm=0.5)) == []
    assert p.trace[-1]["why"] == "turn"
    # worker 0 (active 1.0 s) is granted at once: T = max(0.9, 1.0) = 1.0
    assert perms(p.on_push(rep(0, 0, 1.0))) == [(0, 1, 1.0, 8)]
    assert p.trace[-1]["T_active"] == 1.0
    # worker 1 asks at 1.1; the gap is r*T/N = 0.8 * 1.0 / 3
    assert p.on_push(rep(1, 0, 1.1)) == []
    due = p.next_deadline()
    assert due == pytest.approx(1.0 + 0.8 / 3) and due - 1.0 >= 0.8 / 3
    assert p.on_timer(due - 1e-6) == []
    assert perms(p.on_timer(due)) == [(1, 1, due, 8)]
    # then worker 2, which asked long ago, another gap later
    due2 = p.next_deadline()
    assert due2 == pytest.approx(due + 0.8 / 3)
    assert perms(p.on_timer(due2)) == [(2, 1, due2, 8)]
    assert p.next_deadline() is None


def test_r2sp_ema_weight_and_slowest_worker():
    p = R2SPPolicy(2, 8, R2SPParams(worker_gap_factor=1.0, ema_weight=0.1, t_seed="start"))
    p.start(0.0)
    p.on_push(rep(0, 0, 1.0, compute=0.6, comm=0.4))  # active 1.0 seeds the EMA
    assert p.ema_active[0].value == 1.0
    p.on_push(rep(1, 0, 3.0, compute=2.0, comm=1.0))  # the slow worker: 3.0
    assert p.estimate("active") == 3.0  # T follows the slowest
    p.on_push(rep(0, 1, 4.0, compute=1.5, comm=0.5))  # 0.9 * 1.0 + 0.1 * 2.0
    assert p.ema_active[0].value == pytest.approx(1.1)
    assert p.gap() == pytest.approx(1.0 * 3.0 / 2)
    # the cycle EMA: worker 0 granted at 0.0 then 1.0 -> 1.0
    assert p.ema_cycle[0].value == 1.0


def test_r2sp_lost_worker_is_skipped():
    p = R2SPPolicy(3, 8, R2SPParams(worker_gap_factor=0.5, t_seed="start"))
    p.start(0.0)
    assert perms(p.on_push(rep(0, 0, 1.0))) == [(0, 1, 1.0, 8)]
    assert p.on_push(rep(2, 0, 1.0)) == []  # turn of worker 1
    # worker 1 dies: worker 2 is next, the gap is now r*T/2 = 0.5 * 1.0 / 2
    assert p.on_worker_lost(1, 1.1) == []
    assert p.next_deadline() == pytest.approx(1.25)
    assert perms(p.on_timer(1.25)) == [(2, 1, 1.25, 8)]
    assert p.on_push(rep(1, 0, 2.0)) == []  # a late push of the dead worker is ignored
    assert p.trace[-1]["event"] == "ignored"


def test_r2sp_probe_seeds_t_from_one_uncontended_iteration():
    """T is seeded by the probing worker's lone first iteration, the others follow at the gap.

    Hand-computed, N = 3, r = 0.9: worker 0 alone reports active 0.6 s at 0.6 -> T = 0.6, gap
    0.9 * 0.6 / 3 = 0.18: worker 1 at 0.6 (t_last = 0 + 0.18 <= 0.6), worker 2 at 0.78, worker
    0's iteration 1 at 0.96. Fails if ``start`` grants everyone (t_seed ignored) or if the held
    workers are granted before the probe reports.
    """
    p = R2SPPolicy(3, 8, R2SPParams(worker_gap_factor=0.9, ema_weight=0.1))
    assert perms(p.start(0.0)) == [(0, 0, 0.0, 8)]
    assert p.next_deadline() is None  # nothing is due before the probe reports
    assert p.on_timer(5.0) == []
    got = perms(p.on_push(rep(0, 0, 0.6, compute=0.5, comm=0.1)))
    assert got == [(1, 0, 0.6, 8)]
    assert p.estimate("active") == pytest.approx(0.6)
    assert (due := p.next_deadline()) == pytest.approx(0.78)
    assert perms(p.on_timer(due)) == [(2, 0, due, 8)]
    assert (due := p.next_deadline()) == pytest.approx(0.96)
    assert perms(p.on_timer(due)) == [(0, 1, due, 8)]
    # worker 1's own first iteration (staggered, 0.7 s) seeds its EMA; T = max(0.6, 0.7)
    p.on_push(rep(1, 0, 1.3, compute=0.6, comm=0.1))
    assert p.estimate("active") == pytest.approx(0.7)


def test_r2sp_lost_probe_releases_the_others():
    """If the probing worker dies before reporting, the others start (gap 0, no estimate)."""
    p = R2SPPolicy(3, 8, R2SPParams())
    p.start(0.0)
    assert perms(p.on_worker_lost(0, 2.0)) == [(1, 0, 2.0, 8), (2, 0, 2.0, 8)]


def test_r2sp_t_averages_active_time_without_blocking():
    """The EMA of T folds in compute + comm only, never the blocking time.

    Kills the mutation ``ema_active[w].update(report.active_s + report.blocking_s)``: every
    other test reports blocking 0.
    """
    p = R2SPPolicy(2, 8, R2SPParams(worker_gap_factor=1.0, ema_weight=0.5, t_seed="start"))
    p.start(0.0)
    p.on_push(rep(0, 0, 1.0, compute=0.6, comm=0.4, block=0.0))
    p.on_push(rep(0, 1, 4.0, compute=0.2, comm=0.2, block=2.5))
    assert p.ema_active[0].value == pytest.approx(0.5 * 1.0 + 0.5 * 0.4)


# -- batch-size tuning --------------------------------------------------------------------
def test_tuning_rules_reproduce_table_iii():
    assert idle_rule(512, 429, 0.0) == 512
    assert idle_rule(512, 628, 0.62) == 901
    assert idle_rule(512, 917, 0.82) == 1264
    assert proportional_rule(1000, 628, 429) == 1464  # the Fig. 5 text: ~1500
    assert proportional_rule(1000, 917, 429) == 2138  # ~2200
    assert proportional_rule(512, 917, 429) == 1094
    with pytest.raises(ValueError, match="speed"):
        idle_rule(512, 0.0, 1.0)


def test_tuner_piggybacks_table_iii_on_r2sp_permissions():
    speeds, blocks = (429.0, 628.0, 917.0), (0.0, 0.62, 0.82)
    p = R2SPPolicy(
        3, 512, R2SPParams(worker_gap_factor=0.0, tuning="idle", tuning_warmup=1, t_seed="start")
    )
    p.start(0.0)
    for w in range(3):  # iteration 0 is not used for tuning
        p.on_push(PushReport(w, 0, 1.0, 512 / speeds[w], 0.1, 0.0, 512))
    assert p.tuner is not None and p.tuner.tuned is None
    for w in range(3):
        p.on_push(PushReport(w, 1, 3.0, 512 / speeds[w], 0.1, blocks[w], 512))
    assert p.tuner.tuned == {0: 512, 1: 901, 2: 1264}
    got = []  # the permissions after tuning carry the tuned sizes
    for w in range(3):
        got += p.on_push(PushReport(w, 2, 5.0, 512 / speeds[w], 0.1, 0.0, 512))
    assert [x for x in p.trace if x["event"] == "tune"][0]["batch_sizes"]["2"] == 1264
    assert [(q.worker, q.batch_size) for q in got] == [(0, 512), (1, 901), (2, 1264)]
    prop = BatchTuner("proportional", 512, warmup=1)
    for w in range(3):
        prop.observe(PushReport(w, 1, 3.0, 512 / speeds[w], 0.1, blocks[w], 512))
    assert prop.tune({0, 1, 2}) == {0: 512, 1: 750, 2: 1094}  # 512*628/429 = 749.5 -> 750


# -- SAFA ---------------------------------------------------------------------------------
def test_safa_quorum_absorb_and_discard():
    p = SAFAPolicy(4, 8, SAFAParams(staleness_bound=1, quorum=0.5))
    p.start(0.0)
    assert p.on_push(rep(0, 0, 1.0)) == []  # fresh: waits for the quorum of 2
    assert perms(p.on_push(rep(1, 0, 1.1))) == [(0, 1, 1.1, 8), (1, 1, 1.1, 8)]
    assert p.round == 1
    assert perms(p.on_push(rep(0, 1, 2.0))) == []
    assert perms(p.on_push(rep(1, 1, 2.0))) == [(0, 2, 2.0, 8), (1, 2, 2.0, 8)]
    # worker 2 pulled in round 0; 2 rounds closed since: staleness 2 > 1 -> discarded
    assert not p.accepts(2)
    assert perms(p.on_push(rep(2, 0, 2.5))) == [(2, 1, 2.5, 8)]
    assert (2, 0) in p.discarded and p.trace[-2]["event"] == "discard"
    # worker 2 now pulled round 2 (fresh); worker 3 is lost: the quorum is ceil(0.5*3) = 2
    assert p.on_worker_lost(3, 2.6) == []
    assert p.need() == 2


def test_safa_absorbs_within_bound_and_deadline_closes():
    p = SAFAPolicy(3, 8, SAFAParams(staleness_bound=1, quorum=1 / 3, deadline_s=2.0))
    p.start(0.0)
    assert perms(p.on_push(rep(0, 0, 1.0))) == [(0, 1, 1.0, 8)]  # quorum of 1
    assert p.accepts(1)
    assert perms(p.on_push(rep(1, 0, 1.5))) == [(1, 1, 1.5, 8)]
    assert p.trace[-2]["event"] == "absorb" and p.trace[-2]["staleness"] == 1
    q = SAFAPolicy(3, 8, SAFAParams(quorum=1.0, deadline_s=2.0))
    q.start(0.0)
    assert q.on_push(rep(0, 0, 1.0)) == []
    assert q.next_deadline() == 2.0
    assert q.on_timer(1.9) == []
    assert perms(q.on_timer(2.0)) == [(0, 1, 2.0, 8)]

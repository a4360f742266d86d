"""Update admission: the gate's rules by hand, hostile clients in real runs, run health."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fl_r2sp.fl.clients.attacks import AttackPlan, drawn_attackers, parse_attack
from fl_r2sp.fl.clients.runtime import runtime_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.admission import Admission, AdmissionParams, RunFailed, run_problem
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.transport import InProcessTransport

#: A short digits run: 8 clients in 2 groups, partitions of 150-230 examples.
BASE = dict(
    num_partitions=8,
    num_groups=2,
    local_iterations=10,
    max_updates=16,
    eval_every=8,
    plots=False,
    partitioner="dirichlet",
    seed=1,
)


def gate(k: float = 10.0, warmup: int = 3, window: int = 3, sizes=None) -> Admission:
    return Admission(AdmissionParams(k, warmup, window, sizes), model_size=2)


def reply(weights, n=5, cid=0) -> Reply:
    return Reply(cid, 0, 0, None if weights is None else np.asarray(weights), num_examples=n)


# -- the gate by hand ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("weights", "n", "reason", "needle"),
    [
        (None, 5, "no-weights", "no weights"),
        (np.zeros(3, np.float32), 5, "shape", "wrong shape"),
        (np.zeros((1, 2), np.float32), 5, "shape", "wrong shape"),
        (np.zeros(2, np.float64), 5, "dtype", "float32"),
        (np.array([1.0, np.nan], np.float32), 5, "non-finite", "non-finite"),
        (np.zeros(2, np.float32), -5, "num-examples", "num-examples=-5 outside [1, 100]"),
        (np.zeros(2, np.float32), 0, "num-examples", "outside"),
        (np.zeros(2, np.float32), 10**9, "num-examples", "partition size"),
        (np.zeros(2, np.float32), 2.5, "num-examples", "not an integer"),
        (np.zeros(2, np.float32), True, "num-examples", "not an integer"),
    ],
)
def test_stateless_checks_name_their_reason(weights, n, reason: str, needle: str) -> None:
    verdict = gate(sizes={0: 100}).check(reply(weights, n))
    assert verdict is not None and verdict.reason == reason and verdict.rejected
    assert needle in verdict.message


def test_a_good_reply_passes_and_errors_are_drops() -> None:
    g = gate(sizes={0: 100})
    assert g.check(reply(np.zeros(2, np.float32), 100)) is None
    err = g.check(Reply(0, 0, 0, None, error="client error: boom"))
    late = g.check(Reply(0, 0, 0, None, error="no reply within job-timeout=5s"))
    assert (err.reason, err.rejected, late.reason) == ("client-error", False, "timeout")
    # Unknown partition sizes (timing-only runs): only n >= 1.
    assert gate().check(reply(np.zeros(2, np.float32), 10**9)) is None


def test_norm_bound_warms_up_on_the_start_model_then_follows_the_median() -> None:
    g = gate(k=10.0, warmup=3, window=3)
    start = np.array([3.0, 4.0], np.float32)  # norm 5: warm-up bound 50
    up = lambda d: start + np.array([d, 0.0], np.float32)  # noqa: E731 - delta norm d
    assert g.check_norm(up(60.0), start).reason == "norm"  # 60 > 10 x 5
    for d in (1.0, 2.0, 3.0):
        assert g.check_norm(up(d), start) is None
    assert g.bound(start) == 20.0  # 10 x median(1, 2, 3)
    v = g.check_norm(up(21.0), start)
    assert v.reason == "norm" and "median of recent accepted norms" in v.message
    assert g.check_norm(up(20.0), start) is None  # on the bound: accepted
    assert g.bound(start) == 30.0  # window of 3: median(2, 3, 20)
    assert g.ledger.accepted == 4 and not g.ledger.rejected  # the loop files rejections


def test_norm_check_off_and_zero_start() -> None:
    assert gate(k=0.0).check_norm(np.full(2, 1e30, np.float32), np.zeros(2)) is None
    # A zero start model gives no warm-up bound (it would reject everything).
    assert gate().check_norm(np.ones(2, np.float32), np.zeros(2, np.float32)) is None


def test_run_problem() -> None:
    assert run_problem(np.zeros(3), 4, 8, 0.5) is None  # exactly the share: allowed
    assert "lost 5 of 8 clients" in run_problem(np.zeros(3), 5, 8, 0.5)
    assert "2 non-finite" in run_problem(np.array([np.nan, 1.0, np.inf]), 0, 8, 0.5)


# -- the attack knob -----------------------------------------------------------------
def test_attack_spec_and_draw() -> None:
    terms = parse_attack("huge(1e30)@2 + scale(1000)@5,6 + sign-flip + examples(-5)")
    assert [(t.kind, t.arg, t.ids) for t in terms] == [
        ("huge", 1e30, (2,)),
        ("scale", 1000.0, (5, 6)),
        ("sign-flip", None, None),
        ("examples", -5.0, None),
    ]
    assert parse_attack("none") == ()
    assert len(drawn_attackers(0, 16, 0.25)) == 4 and drawn_attackers(0, 16, 0.0) == set()
    assert drawn_attackers(3, 16, 1 / 16) == drawn_attackers(3, 16, 1 / 16)
    for bad in ("scale(x)", "flip", "sign-flip(2)", "huge(inf)", "huge(1e39)"):
        with pytest.raises(ValueError, match="attack"):
            parse_attack(bad)
    with pytest.raises(ValueError, match="outside 0..7"):
        AttackPlan.of("scale(2)@9", 0.0, 0, 8)


def test_attacks_rewrite_the_reply() -> None:
    job = Job(1, 0, 0, np.array([1.0, 1.0], np.float32))
    honest = Reply(1, 0, 0, np.array([2.0, 0.0], np.float32), num_examples=7)
    out = AttackPlan.of("sign-flip@1", 0, 0, 4).apply(job, honest)
    assert out.weights.tolist() == [0.0, 2.0]
    out = AttackPlan.of("scale(10)@1+examples(-5)@1", 0, 0, 4).apply(job, honest)
    assert out.weights.tolist() == [11.0, -9.0] and out.num_examples == -5
    assert AttackPlan.of("huge@0", 0, 0, 4).apply(job, honest) is honest  # not client 0


def test_fuzz_kinds_send_a_nan_or_a_vector_of_the_wrong_size() -> None:
    job = Job(1, 0, 0, np.array([1.0, 1.0], np.float32))
    honest = Reply(1, 0, 0, np.array([2.0, 0.0], np.float32), num_examples=7)
    nan = AttackPlan.of("nan@1", 0, 0, 4).apply(job, honest).weights
    assert np.isnan(nan[0]) and nan[1] == 0.0
    assert AttackPlan.of("shape@1", 0, 0, 4).apply(job, honest).weights.tolist() == [2, 0, 0]
    assert AttackPlan.of("shape(-1)@1", 0, 0, 4).apply(job, honest).weights.tolist() == [2]
    for bad in ("nan(1)", "shape(0)", "shape(1.5)"):
        with pytest.raises(ValueError, match="attack term"):
            parse_attack(bad)
    g = gate()
    assert g.check(reply(nan, cid=1)).reason == "non-finite"
    assert g.check(reply(np.zeros(3, np.float32), cid=1)).reason == "shape"
    misfit = Reply(1, 0, 0, None, error="rejected update: array 0 has dtype float64, expected ...")
    assert (g.check(misfit).reason, g.check(misfit).rejected) == ("dtype", True)


# -- whole runs ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clean_run():
    return run(RunConfig(**BASE), write=False, progress=False)


def test_huge_and_scaled_clients_are_rejected_and_honest_ones_kept(clean_run) -> None:
    out = run(RunConfig(attack="huge(1e30)@2+scale(1000)@5", **BASE), write=False, progress=False)
    s = out.summary
    # Each attacker: 4 rejected answers in a row (max-rejections = 3, one more drops it).
    assert s["updates_rejected"] == {"norm": 8} and s["jobs_dropped"] == {}
    assert s["policy_dropped"] == [2, 5] and s["status"] == "completed"
    failed = {(r["cid"], r["job"]) for r in out.events.jobs if r.get("failed")}
    assert failed == {(c, j) for c in (2, 5) for j in range(4)}
    # The ledger accounts for every job that reached the server.
    pushed = [r for r in out.events.jobs if "push_end" in r and not r.get("failed")]
    assert s["updates_accepted"] == len(pushed)
    assert abs(s["final_accuracy"] - clean_run.summary["final_accuracy"]) <= 0.05


def test_bad_example_counts_are_rejected_and_the_run_completes(clean_run) -> None:
    cfg = RunConfig(attack="examples(-5)@1+examples(1e9)@4", aggregation="weighted", **BASE)
    out = run(cfg, write=False, progress=False)
    s = out.summary
    assert s["updates_rejected"] == {"num-examples": 8} and s["policy_dropped"] == [1, 4]
    assert s["global_updates"] == BASE["max_updates"] and s["status"] == "completed"
    msgs = {r["cid"]: r["failed"] for r in out.events.jobs if r.get("failed")}
    assert "num-examples=-5" in msgs[1] and "num-examples=1000000000" in msgs[4]


def test_fuzzed_clients_are_rejected_by_reason_and_the_run_completes() -> None:
    out = run(RunConfig(attack="nan@1+shape(1)@4", **BASE), write=False, progress=False)
    s = out.summary
    # Each fuzzer: 4 rejected answers (max-rejections = 3, one more drops it).
    assert s["updates_rejected"] == {"non-finite": 4, "shape": 4}
    assert s["policy_dropped"] == [1, 4] and s["status"] == "completed"
    assert s["global_updates"] == BASE["max_updates"]


def test_norm_admission_keeps_virtual_runs_independent_of_arrival_order() -> None:
    cfg = RunConfig(**{**BASE, "max_updates": 8}, attack="scale(30)@3", admission_warmup=2)
    runtime = runtime_for(cfg)
    outs = [
        run(
            cfg,
            transport=InProcessTransport(range(8), runtime.run, shuffle_seed=s),
            write=False,
            progress=False,
        )
        for s in (None, 1)
    ]
    assert np.array_equal(outs[0].weights, outs[1].weights)
    # Past the warm-up, 30x the honest delta breaks 10x the median: 4 rejections, dropped.
    assert [o.summary["updates_rejected"] for o in outs] == [{"norm": 4}] * 2


def test_wall_clock_loop_admits_too() -> None:
    cfg = RunConfig(
        **{**BASE, "max_updates": 4, "local_iterations": 2},
        clock="wall",
        delay="constant(value=0.01)",
        attack="huge(1e30)@1",
    )
    s = run(cfg, write=False, progress=False).summary
    assert s["updates_rejected"]["norm"] >= 1 and s["status"] == "completed"


def test_losing_too_many_clients_fails_the_run_with_the_reason(tmp_path) -> None:
    cfg = RunConfig(**BASE, attack="huge", attack_fraction=0.625, run_dir=str(tmp_path))
    with pytest.raises(RunFailed, match=r"lost 5 of 8 clients .* max-lost-share=0.5") as info:
        run(cfg, progress=False, run_name="lossy")
    summary = json.loads((tmp_path / "lossy" / "summary.json").read_text())["summary"]
    assert summary["status"] == "failed" and "lost 5 of 8" in summary["failure"]
    assert info.value.output.summary["updates_rejected"] == {"norm": 20}
    # With a looser limit the same run counts as completed.
    out = run(cfg.replace(max_lost_share=0.7), write=False, progress=False)
    assert out.summary["status"] == "completed" and out.summary["lost_share"] == 0.625

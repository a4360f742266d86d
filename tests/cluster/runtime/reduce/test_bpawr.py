"""BPAWR's HOLD / WAIT / LAUNCH decisions in the real runtime, against the policy and the twin.

Four gloo workers (``run_local``) sleep scripted compute times; caps are known to the
controller. The scenario (p = 2, η = 0.3, θ·Δt = 10 ms, cold start from 2 observed rounds,
hazard F(t + Δt)) by hand, with the mlp's v = 4810 · 4 B:

* t = 0.3: workers 0 (40 MB/s) and 1 (0.4 MB/s) are queued; worker 2 (30 MB/s) is training and
  F(0.3 + 0.1) = 1 over the samples {0.2, 0.3}: one virtual worker of 30 MB/s. T({0, 1}) =
  v / 0.4 MB/s = 48.1 ms, T({0, virtual}) = v / 30 MB/s = 0.64 ms (+ 2α each): 47.5 ms saved
  > θ·Δt = 10 ms, so WAIT and replace worker 1 (repeated every Δt while nothing changes);
* t = 0.75: worker 2 is ready; BAG gives [[0, 2], [1]] (b* = 0.7 · 30 = 21 MB/s); nobody
  training is faster than 30 MB/s (worker 3 has 0.4), so LAUNCH {0, 2}; [1] is below p: HOLD.

Checks: (1) the runtime's trace starts with exactly these decisions; (2) a fresh controller fed
the runtime's recorded inputs (``controller_inputs.json``) makes the runtime's decisions, all of
them, at the same instants; (3) the simulator, given the same script, reaches the same decision
sequence up to the hold (consecutive repeats of a wait collapsed: how many Δt re-evaluations
fit before a ready event depends on milliseconds of runtime overhead).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.policies.reduce import ReduceParams, make_reduce_controller
from fl_r2sp.cluster.policies.reduce.recorder import replay_inputs
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig
from fl_r2sp.cluster.sim.reduce.engine import run_reduce_sim
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec

CAPS = (40.0, 0.4, 30.0, 0.4)  # MB/s
#: Compute seconds per worker and round (the last one repeats).
SCRIPT = ((0.2, 0.2, 0.3), (0.3, 0.4, 0.4), (0.75, 0.5, 0.5), (1.6, 0.5, 0.5))
PARAMS = ReduceParams("selective", p=2, eta=0.3, theta=0.1, delta_t=0.1, min_samples=2)
MODEL_BYTES = 4810 * 4  # the mlp's parameters, float32
ALPHA = 0.001
DECISIONS = ("launch", "wait", "hold")


def _decisions(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["event"], list(e["members"]), list(e.get("replace", [])))
            for e in trace if e["event"] in DECISIONS]  # fmt: skip


def _collapse(seq: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [d for i, d in enumerate(seq) if i == 0 or d != seq[i - 1]]


def _until_first_hold(seq: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    ends = [i for i, d in enumerate(seq) if d[0] == "hold"]
    assert ends, seq
    return seq[: ends[0] + 1]


def _runtime_trace(run_dir: Path) -> list[dict[str, Any]]:
    with open(run_dir / "permissions.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        entry: dict[str, Any] = {"event": row["event"], "at": float(row["at"])}
        for key in ("members", "replace"):
            if row.get(key):
                entry[key] = json.loads(row[key])
        out.append(entry)
    return out


@pytest.fixture(scope="module")
def runtime_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = ClusterConfig(
        workers=4, servers=1, model="mlp", dataset="synthetic", batch_size=8, lr=0.1,
        max_iterations=3, timeout_s=20.0, run_timeout_s=60.0,
        run_dir=str(tmp_path_factory.mktemp("bpawr")), eval_samples=0, progress_s=0.0,
        plots=False, scripted_compute=SCRIPT,
    )  # fmt: skip
    cfg = ReduceRunConfig(base=base, reduce=PARAMS, link_caps_mb_s=CAPS, bw_estimate="known",
                          alpha_s=ALPHA)  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    return Path(run.summary["run_dir"])


def test_runtime_makes_the_hand_computed_wait_launch_hold(runtime_run: Path) -> None:
    trace = _runtime_trace(runtime_run)
    first = _collapse(_until_first_hold(_decisions(trace)))
    assert first == [("wait", [0, 1], [1]), ("launch", [0, 2], []), ("hold", [1], [])]
    waits = [e for e in trace if e["event"] == "wait"]
    # the first wait at worker 1's ready (~0.3 s), re-evaluated every Δt until worker 2 (~0.75 s)
    assert 3 <= len([e for e in waits if e["at"] < 0.8]) <= 6


def test_the_policy_replayed_on_the_runtime_inputs_decides_the_same(runtime_run: Path) -> None:
    inputs = json.loads((runtime_run / "controller_inputs.json").read_text())
    assert {e["event"] for e in inputs} >= {"start", "ready", "done", "timer", "lost", "finish"}
    bandwidth = [c * 1e6 for c in CAPS]
    ctl = make_reduce_controller(PARAMS, bandwidth, MODEL_BYTES, ALPHA)
    replay_inputs(ctl, inputs)
    got = _runtime_trace(runtime_run)
    assert [(e["event"], e.get("members"), e.get("replace")) for e in ctl.trace] == [
        (e["event"], e.get("members"), e.get("replace")) for e in got
    ]
    assert [e["at"] for e in ctl.trace] == pytest.approx([e["at"] for e in got], abs=1e-9)
    kinds = {e["event"] for e in got}
    assert {"wait", "launch", "hold"} <= kinds  # all three decisions were exercised


def test_the_simulator_reaches_the_same_decisions_on_the_same_script(runtime_run: Path) -> None:
    spec = ReduceSimSpec(
        params=PARAMS, num_workers=4, duration_s=5.0, model_bytes=MODEL_BYTES, alpha_s=ALPHA,
        bandwidth_gbps=[c * 8e-3 for c in CAPS], start="cold",
        compute_script={w: list(times) for w, times in enumerate(SCRIPT)},
    )  # fmt: skip
    sim = _collapse(_until_first_hold(_decisions(run_reduce_sim(spec).trace)))
    real = _collapse(_until_first_hold(_decisions(_runtime_trace(runtime_run))))
    assert sim == real

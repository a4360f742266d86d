"""SAFA's admission verdict is honoured by every parameter-server shard.

Unit tests of the held-push bookkeeping (values by hand), then one real run (3 workers, 2 PS,
scripted compute times, gloo on CPU) in which a straggler's first update is absorbed and its
second is too stale: the second is applied at no shard, the first at every shard.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.runtime.ps.shard import ShardState
from fl_r2sp.cluster.schemes import scheme_params


def _held_shard() -> ShardState:
    # lr 0.5, b0 = 2: a push of batch 2 moves the parameters by -0.5·g.
    return ShardState(torch.zeros(2), 0.5, 2, 0.0, "immediate", 2, admission=True)


def test_a_held_push_changes_nothing_until_its_verdict() -> None:
    s = _held_shard()
    s.push(0, 0, 2, torch.tensor([1.0, 2.0]))
    assert s.params.tolist() == [0.0, 0.0] and s.applied == 0
    assert s.resolve(0, 0, apply=True)
    assert s.params.tolist() == [-0.5, -1.0] and s.applied == 1


def test_a_refused_push_is_dropped_and_recorded() -> None:
    s = _held_shard()
    s.push(1, 3, 2, torch.tensor([4.0, 4.0]))
    assert not s.resolve(1, 3, apply=False)
    assert s.params.tolist() == [0.0, 0.0] and s.applied == 0 and s.dropped == [(1, 3)]
    assert s.pushes == [0, 1]  # received, counted, not applied


def test_a_worker_cannot_pull_past_its_own_unresolved_push() -> None:
    s = _held_shard()
    s.push(0, 0, 2, torch.tensor([1.0, 1.0]))
    out = torch.empty(2)
    with pytest.raises(TimeoutError, match="verdict on its push of iteration 0"):
        s.read(0, 0, out, timeout_s=0.01)
    assert s.read(1, 0, out, timeout_s=0.01) == 0  # another worker is not held back
    s.resolve(0, 0, apply=True)
    s.read(0, 0, out, timeout_s=0.01)
    assert out.tolist() == [-0.5, -0.5]


def test_resolving_a_push_that_is_not_held_is_an_error() -> None:
    s = _held_shard()
    with pytest.raises(ValueError, match="no held push of worker 0 iteration 0"):
        s.resolve(0, 0, apply=True)
    with pytest.raises(ValueError, match="needs the immediate apply mode"):
        ShardState(torch.zeros(2), 0.5, 2, 0.0, "barrier", 2, admission=True)


def test_only_safa_asks_for_admission_and_others_accept_everything() -> None:
    for scheme in ("bsp", "asp", "ssp", "r2sp"):
        policy = scheme_params(scheme).policy(2, 4)
        assert not policy.admission and policy.accepts(0)
    safa = scheme_params("safa").policy(2, 4)
    assert safa.admission
    safa.on_worker_lost(1, 0.0)
    assert safa.accepts(0) and not safa.accepts(1)  # a lost worker's push is ignored


def test_a_straggler_beyond_the_bound_is_applied_at_no_shard(tmp_path: Path) -> None:
    # Bound 2, quorum 0.5 of 3 = 2 fresh pushes close a round. Workers 0 and 1 take 0.6 s per
    # iteration: rounds close at about 0.6, 1.2, ..., 3.6 s. Worker 2 pushes its first update
    # at about 1.2 s, between the rounds of 0.6 s and 1.8 s: staleness 1 or 2, absorbed (it
    # would have to run 0.6 s early or late against the fast workers). Its second iteration
    # takes 4 s: the rounds up to 3.6 s close meanwhile, staleness >= 3, discarded (unless the
    # fast workers fall 1.6 s behind). Its later iterations are fresh. The margins are tenths
    # of seconds and more, not the scheduler's milliseconds (0.15 s margins failed at load
    # 7-35), and the assertions below name what the behaviour needs, not one exact schedule.
    fast = (0.6,) * 6
    times = (fast, fast, (1.2, 4.0, 0.05, 0.05, 0.05, 0.05))
    cfg = ClusterConfig(
        workers=3, servers=2, scheme=scheme_params("safa", staleness_bound=2),
        model="mlp", dataset="synthetic", batch_size=8, max_iterations=6, timeout_s=30.0,
        run_timeout_s=90.0, run_dir=str(tmp_path), eval_samples=0, progress_s=0.0, plots=False,
        scripted_compute=times,
    )  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    with open(Path(run.summary["run_dir"]) / "permissions.csv", newline="") as fh:
        trace = list(csv.DictReader(fh))
    # On failure the schedule is in the message: a wrong verdict from a late worker then reads
    # differently from a shard that applied a discarded push.
    schedule = [(e["event"], e["at"], e["worker"], e["iteration"]) for e in trace]
    verdicts = {(int(e["worker"]), int(e["iteration"])): e["event"] for e in trace
                if e["event"] in ("absorb", "discard")}  # fmt: skip
    assert verdicts.get((2, 0)) == "absorb", schedule
    assert verdicts.get((2, 1)) == "discard", schedule
    discarded = sorted([w, k] for (w, k), v in verdicts.items() if v == "discard")
    # Every shard dropped exactly the coordinator's discards, and applied every other push.
    assert run.summary["discarded_updates"] == [discarded, discarded]
    assert run.summary["updates_applied"] == [18 - len(discarded)] * 2

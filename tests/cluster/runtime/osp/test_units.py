"""OSP runtime pieces without processes: layer layout, a shard's barriers, PS 0's GIB planner
(every expected value computed by hand in the comments)."""

from __future__ import annotations

import threading

import pytest
import torch

from fl_r2sp.cluster.runtime.osp.gib import GibPlanner, IterationSums
from fl_r2sp.cluster.runtime.osp.layout import LayerLayout, add_ranges, gather
from fl_r2sp.cluster.runtime.osp.shard import ICS, RS, OSPShard
from fl_r2sp.cluster.runtime.ps.shard import RunAborted
from fl_r2sp.cluster.schemes import scheme_params


def test_layout_clips_layers_to_shards_and_moves_elements() -> None:
    lay = LayerLayout(ranges=((0, 3), (3, 4), (4, 8)), bounds=((0, 5), (5, 8)))
    bitmap = lay.bitmap([2])  # layer 2 in ICS
    assert lay.shard_ranges(0, bitmap, ics=False) == [(0, 3), (3, 4)]
    assert lay.shard_ranges(0, bitmap, ics=True) == [(4, 5)]
    assert lay.shard_ranges(1, bitmap, ics=True) == [(5, 8)]
    assert lay.shard_ranges(1, bitmap, ics=False) == []
    flat = torch.arange(8.0)
    assert gather(flat, [(1, 2), (5, 7)]).tolist() == [1.0, 5.0, 6.0]
    add_ranges(flat, [(1, 2), (5, 7)], torch.tensor([1.0, 1.0, 2.0]), -2.0)
    assert flat.tolist() == [0.0, -1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 7.0]
    # shard 1 holds elements 5..7: layer 2's sum there only
    assert lay.shard_sums(1, torch.tensor([1.0, 2.0, 3.0])) == [0.0, 0.0, 6.0]
    with pytest.raises(ValueError, match="out of range"):
        lay.bitmap([3])


def test_shard_barriers_average_apply_and_report_importance() -> None:
    lay = LayerLayout(ranges=((0, 2), (2, 3)), bounds=((0, 3),))
    done: list[tuple] = []
    shard = OSPShard(torch.ones(3), 0, lay, lr=0.5, workers=2,
                     on_complete=lambda *a: done.append(a))  # fmt: skip
    rs, ics = [(0, 2)], [(2, 3)]
    shard.submit(RS, 1, 0, rs, torch.tensor([0.0, 0.0]), loss=3.0, compute_s=0.2)
    shard.submit(RS, 0, 0, rs, torch.tensor([2.0, 4.0]), loss=1.0, compute_s=0.1)
    assert shard.await_mean(RS, 0, 1.0).tolist() == [1.0, 2.0]  # mean of [2,4] and [0,0]
    assert shard.params.tolist() == [0.5, 0.0, 1.0]  # 1 - 0.5·[1, 2]
    assert done == []  # ICS of iteration 0 still open
    shard.submit(ICS, 0, 0, ics, torch.tensor([2.0]))
    shard.submit(ICS, 1, 0, ics, torch.tensor([4.0]))
    assert shard.params.tolist() == [0.5, 0.0, -0.5]  # 1 - 0.5·3
    # ḡ = [1, 2, 3], P = [0.5, 0, -0.5]: I = [|1·0.5| + |2·0|, |3·-0.5|] = [0.5, 1.5]
    assert done == [(0, IterationSums([0.5, 1.5], [3.0, 3.0], [1.0, 3.0], [0.1, 0.2]))]
    assert shard.version == 1 and shard.applied == 2
    with pytest.raises(ValueError, match="duplicate"):
        shard.submit(RS, 0, 0, rs, torch.tensor([0.0, 0.0]))


def test_shard_releases_waiters_on_loss_and_on_abort() -> None:
    lay = LayerLayout(ranges=((0, 2),), bounds=((0, 2),))
    shard = OSPShard(torch.zeros(2), 0, lay, lr=1.0, workers=2)
    shard.submit(RS, 0, 0, [(0, 2)], torch.tensor([2.0, 2.0]))
    shard.lose(1)  # the barrier now needs worker 0 only
    assert shard.await_mean(RS, 0, 1.0).tolist() == [2.0, 2.0]
    got: list[BaseException] = []
    shard2 = OSPShard(torch.zeros(2), 0, lay, lr=1.0, workers=2)
    shard2.submit(RS, 0, 0, [(0, 2)], torch.tensor([1.0, 1.0]))

    def wait() -> None:
        try:
            shard2.await_mean(RS, 0, 10.0)
        except RunAborted as exc:
            got.append(exc)

    t = threading.Thread(target=wait)
    t.start()
    shard2.abort("worker 1 lost")
    t.join(5.0)
    assert not t.is_alive() and len(got) == 1 and "worker 1 lost" in str(got[0])


def _planner(**osp: object) -> GibPlanner:
    # layers of 4, 4, 8, 16 bytes (model 32 B); b = 1 B/s (bandwidth_mb_s = 1e-6), N = 2,
    # epochs of 2 iterations.
    sp = scheme_params("osp", bandwidth_mb_s=1e-6, epoch_iterations=2, **osp)  # type: ignore[arg-type]
    return GibPlanner(sp.validate(), [4.0, 4.0, 8.0, 16.0], 2, 2, 0.0, seed=0)


def test_planner_runs_algorithm_1_per_epoch() -> None:
    p = _planner()
    assert p.first() == [] and p.budget == 0.0  # epoch 1: S = 0
    imp = [0.0, 1.0, 2.0, 3.0]
    # L = 4; still epoch 1
    assert p.next(0, IterationSums(imp, imp, [4.0, 4.0], [20.0, 20.0])) == []
    # Epoch 2 starts at iteration 2: T_C = 20 s, U_max = 1·20/2 = 10 B (cap 0.8·32 = 25.6);
    # epoch 1's mean loss = (4 + 0)/2 = 2, so S_2 = (1 - 2/4)·10 = 5 B: layer 0 (4 B) fits,
    # layer 1 would make 8 B.
    assert p.next(1, IterationSums(imp, imp, [0.0, 0.0], [20.0, 20.0])) == [0]
    assert p.umax == 10.0 and p.budget == 5.0
    assert [r["iteration"] for r in p.records] == [0, 1, 2]


def test_planner_fixed_budget_and_the_selection_ablations() -> None:
    p = _planner(budget="fixed", fixed_mb=1e-5)  # 10 B
    assert p.first() == [0, 1]  # zero scores: layer order, 4 + 4 B fit, + 8 B would not
    top = _planner(budget="fixed", fixed_mb=1e-5, selection="topk")
    top.first()
    # Σ|g| = [5, 0, 1, 1]: layer 1 (4 B), then layer 2 (tie with 3, lower index) makes 12 B.
    assert top.next(0, IterationSums([0.0] * 4, [5.0, 0.0, 1.0, 1.0], [1.0], [1.0])) == [1]
    capped = _planner(budget="fixed", fixed_mb=1.0)  # capped at 25.6 B
    assert capped.first() == [0, 1, 2]  # 16 B; + 16 B would exceed the cap

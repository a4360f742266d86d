"""The all-reduce-family runtime (no PS) on CPU/gloo: groups, reduce, decisions, faults.

Jobs are tiny (mlp, synthetic data) and run as plain processes (``run_local``); the subgroup
tests fork four bare gloo processes. Every wait is bounded by the configured timeouts.
"""

from __future__ import annotations

import csv
import json
import multiprocessing as mp
import os
import random
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.data import BatchStream, make_dataset
from fl_r2sp.cluster.local import free_port, run_local
from fl_r2sp.cluster.models import batch_loss, build_cluster_model
from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.runtime.peer.subgroups import (
    GroupRegistry,
    SubgroupCache,
    ring_bytes,
    set_key,
    weighted_allreduce,
)
from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV, worker_seed
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig
from fl_r2sp.cluster.sim.reduce.engine import run_reduce_sim
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec

#: Ready events of different workers at least this far apart in the simulator, so that the
#: runtime's few milliseconds of communication per round cannot reorder them.
MIN_SEPARATION_S = 0.1
#: Ready events checked; the test compares the launches they make (groups of 2).
CHECKED_READY = 18


# -- the controller's mirror of the group caches ----------------------------------------------
def test_registry_reuses_a_cached_set_and_evicts_least_recently_used() -> None:
    reg = GroupRegistry(capacity=2)
    a = reg.plan([1, 0])
    assert (a.pg_id, a.build, a.drops) == ("0-1.1", True, {1: [], 0: []})
    again = reg.plan([0, 1])  # same member set, any order: reused, nothing built
    assert (again.pg_id, again.build) == ("0-1.1", False)
    reg.plan([0, 2])  # worker 0 now holds 0-1.1 and 0-2.2 (full)
    c = reg.plan([0, 3])  # worker 0 evicts its least recently used group
    assert c.pg_id == "0-3.3" and c.drops == {0: ["0-1.1"], 3: []}
    d = reg.plan([0, 1])  # worker 1 still has 0-1.1, worker 0 does not: rebuilt, new generation
    assert d.build and d.pg_id == "0-1.4"
    assert d.drops == {0: ["0-2.2"], 1: ["0-1.1"]}
    assert reg.held_by(0) == ["0-3.3", "0-1.4"] and reg.builds == 4


def test_registry_rebuilds_a_failed_group_and_uncached_mode_is_ephemeral() -> None:
    reg = GroupRegistry(capacity=4)
    first = reg.plan([2, 5])
    reg.invalidate(first.pg_id)
    second = reg.plan([2, 5])
    assert second.build and second.pg_id == "2-5.2" and second.drops == {2: [], 5: []}
    none = GroupRegistry(capacity=0).plan([1, 2])
    assert none.build and none.ephemeral and none.pg_id == "1-2.1"
    assert set_key([3, 1, 2]) == "1-2-3" and ring_bytes(1000, 4) == 1500 and ring_bytes(8, 1) == 0


# -- real gloo subgroups in forked processes --------------------------------------------------
def _subgroup_rank(rank: int, world: int, url: str, out: Any) -> None:
    import torch.distributed as dist

    os.environ["OMP_NUM_THREADS"] = "1"
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    store = dist.distributed_c10d._get_default_store()
    cache = SubgroupCache(store, rank, timeout_s=20.0)
    result: dict[str, Any] = {"rank": rank}
    members, weights = [3, 0, 2], [0.5, 0.3, 0.2]
    if rank in members:  # a weighted partial all-reduce; rank 1 is not in it
        flat = torch.arange(5, dtype=torch.float32) * (rank + 1) + rank
        pg = cache.get("0-2-3.1", members, build=True)
        weighted_allreduce(flat, weights[members.index(rank)], pg)
        result["reduced"] = flat.tolist()
    # 100 groups drawn from a shared seed: the registry (a copy in every rank, same plans)
    # says who builds and who drops; capacity 2 (each rank is in 3 of the 6 pairs) forces
    # evictions and rebuilds.
    reg, rng = GroupRegistry(capacity=2), random.Random(7)
    cache.clear()
    tasks = lambda: len(os.listdir("/proc/self/task"))  # noqa: E731
    fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    result["before"] = (tasks(), fds())
    for _ in range(100):
        group = sorted(rng.sample(range(world), 2))
        plan = reg.plan(group)
        if rank in group:
            cache.drop(plan.drops.get(rank, []))
            pg = cache.get(plan.pg_id, group, plan.build)
            weighted_allreduce(torch.ones(4), 0.5, pg)
    result["after"] = (tasks(), fds())
    result["cached"], result["built"] = len(cache), cache.built
    out.put(result)
    dist.barrier()
    dist.destroy_process_group()


def test_weighted_partial_allreduce_and_a_bounded_group_cache() -> None:
    ctx = mp.get_context("fork")
    out = ctx.SimpleQueue()
    url = f"tcp://127.0.0.1:{free_port()}"
    procs = [ctx.Process(target=_subgroup_rank, args=(r, 4, url, out)) for r in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(90)
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive and [p.exitcode for p in procs] == [0] * 4
    results = {r["rank"]: r for r in (out.get() for _ in range(4))}
    base = torch.arange(5, dtype=torch.float64)
    want = sum(w * (base * (r + 1) + r) for r, w in zip([3, 0, 2], [0.5, 0.3, 0.2], strict=True))
    for r in (0, 2, 3):
        got = torch.tensor(results[r]["reduced"], dtype=torch.float64)
        assert (got - want).abs().max().item() <= 1e-6
    assert "reduced" not in results[1]
    for r in range(4):
        res = results[r]
        assert res["cached"] <= 2 and res["built"] > 10  # many groups came and went
        # Each gloo group holds ~3 threads and ~5 fds; 100 uncached groups would hold ~300
        # threads. The bound allows the 2 cached groups plus slack.
        assert res["after"][0] - res["before"][0] <= 15, res
        assert res["after"][1] - res["before"][1] <= 30, res


# -- whole runs -------------------------------------------------------------------------------
def _cfg(tmp: Path, scheme: str, workers: int = 3, iterations: int = 4, **kw: Any
         ) -> ReduceRunConfig:  # fmt: skip
    base = ClusterConfig(
        workers=workers, servers=1, model="mlp", dataset="synthetic", batch_size=8, lr=0.1,
        max_iterations=iterations, timeout_s=kw.pop("timeout_s", 20.0), run_timeout_s=60.0,
        run_dir=str(tmp), eval_samples=0, progress_s=0.0, plots=False,
        scripted_compute=kw.pop("scripted", ()),
    )  # fmt: skip
    return ReduceRunConfig(base=base, reduce=ReduceParams(scheme, **kw.pop("knobs", {})), **kw)


def test_allreduce_bsp_equals_averaging_the_workers_sgd_steps(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "allreduce", link_caps_mb_s=(50.0, 20.0, 80.0))
    run = run_local(cfg)
    s = run.summary
    assert s is not None and s["status"] == "ok" and run.exitcodes == [0, 0, 0], run
    assert s["total_syncs"] == 4 and s["scale"] == 3.0 and s["failed_syncs"] == 0
    got = torch.load(Path(s["run_dir"]) / "final_params.pt")["flat"]
    model = build_cluster_model("mlp", 10, 0)
    params = [p for p in model.parameters() if p.requires_grad]
    train = make_dataset("mlp", "synthetic", None, 0, include_test=False).train
    streams = [BatchStream(train, 8, torch.Generator().manual_seed(worker_seed(0, w)))
               for w in range(3)]  # fmt: skip
    flat = nn.utils.parameters_to_vector(params).detach().clone()
    for _ in range(4):  # every worker steps from the same model; the group averages (weights 1/3)
        steps = []
        for stream in streams:
            nn.utils.vector_to_parameters(flat, params)
            model.zero_grad()
            batch_loss(model, *stream.take()).backward()
            grad = torch.cat([p.grad.reshape(-1) for p in params])  # type: ignore[union-attr]
            steps.append(flat - 0.1 * grad)
        flat = torch.stack(steps).mean(0)
    assert (got - flat).abs().max().item() <= 1e-6


def _sim_launches(params: ReduceParams, script: dict[int, list[float]], caps: tuple[float, ...]
                  ) -> list[list[int]]:  # fmt: skip
    spec = ReduceSimSpec(
        params=params, num_workers=len(script), duration_s=30.0, model_bytes=4810 * 4,
        alpha_s=0.004, bandwidth_gbps=[c * 8e-3 for c in caps], compute_script=script,
    )  # fmt: skip
    res = run_reduce_sim(spec)
    # Ready instants: round 0 at its compute time, later rounds a compute time after the end
    # of the worker's previous sync.
    ready = [(script[w][0], w) for w in script]
    rounds = dict.fromkeys(script, 0)
    for s in sorted(res.syncs, key=lambda s: s["end"]):
        for w in s["members"]:
            rounds[w] += 1
            ready.append((s["end"] + script[w][min(rounds[w], len(script[w]) - 1)], w))
    ready = sorted(ready)[:CHECKED_READY]
    gaps = [b[0] - a[0] for a, b in zip(ready, ready[1:], strict=False) if a[1] != b[1]]
    assert min(gaps) >= MIN_SEPARATION_S, ready  # precondition: no near-simultaneous arrivals
    return [list(e["members"]) for e in res.trace if e["event"] == "launch"]


def _runtime_launches(run_dir: str) -> list[list[int]]:
    with open(Path(run_dir) / "permissions.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        if row["event"] != "launch":
            if row["event"] == "lost":  # a worker left (budget): later decisions differ
                break
            continue
        out.append(json.loads(row["members"]))
    return out


#: Compute seconds per worker and round, adjusted until the simulator's ready events of
#: different workers are >= MIN_SEPARATION_S apart for both schemes (checked in the test).
SCRIPT = {
    w: [2.0 * t for t in times]  # doubled: the margins grow, the runtime's overhead does not
    for w, times in {
        0: [0.26, 0.46, 0.32, 0.42, 0.43, 0.25, 0.16, 0.53],
        1: [0.34, 0.26, 0.6, 0.36, 0.53, 0.36, 0.44, 0.22],
        2: [0.51, 0.54, 0.39, 0.48, 0.52, 0.25, 0.49, 0.42],
        3: [0.43, 0.16, 0.54, 0.43, 0.47, 0.55, 0.47, 0.56],
    }.items()
}


@pytest.mark.parametrize(
    "scheme, knobs",
    [("partial", {"p": 2}), ("selective", {"p": 2, "eta": 0.3, "min_samples": 1000})],
)
def test_runtime_and_simulator_launch_the_same_groups(
    tmp_path: Path, scheme: str, knobs: dict[str, Any]
) -> None:
    caps = (40.0, 5.0, 30.0, 4.0)  # MB/s: BAG pairs {0, 2} and {1, 3} when all are ready
    params = ReduceParams(scheme, **knobs)
    want = _sim_launches(params, SCRIPT, caps)
    cfg = _cfg(tmp_path, scheme, workers=4, iterations=6, link_caps_mb_s=caps,
               bw_estimate="known", alpha_s=0.004, knobs=knobs,
               scripted=tuple(tuple(t) for t in SCRIPT.values()))  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    got = _runtime_launches(run.summary["run_dir"])
    compared = CHECKED_READY // 2  # groups of p = 2: the launches the separation check covers
    assert len(got) >= compared, got
    assert got[:compared] == want[:compared]


def test_a_killed_worker_is_dropped_and_the_others_finish(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "partial", workers=4, iterations=5, timeout_s=2.0,
               ready_timeout_s=4.0, knobs={"p": 2})  # fmt: skip
    run = run_local(cfg, env={KILL_ENV: "2:1"})  # worker 2 dies queued, after announcing round 1
    s = run.summary
    assert s is not None and s["status"] == "ok", run
    assert run.exitcodes[2] == 17 and [run.exitcodes[i] for i in (0, 1, 3)] == [0, 0, 0]
    assert list(s["lost_workers"]) == ["2"]
    assert s["total_iterations"] >= 12  # the three others used the rest of the budget


def test_selective_launches_the_last_live_worker_alone() -> None:
    # p = 2 of 3; workers 1 and 2 leave (budget or death): the live-capped p is 1, so the
    # queued worker 0 must launch alone instead of being held for a partner forever.
    from fl_r2sp.cluster.policies.reduce import SelectiveReduceController

    ctl = SelectiveReduceController(ReduceParams("selective", p=2), [1e9, 1e9, 1e9])
    ctl.start(0.0)
    assert ctl.on_ready(0, 0.3, 0, 0.3) == []
    assert ctl.on_worker_lost(1, 0.4) == []
    launches = ctl.on_worker_lost(2, 0.5)
    assert [la.members for la in launches] == [(0,)] and launches[0].weights == (1.0,)


def test_reduce_worker_uses_the_controllers_weight(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member all-reduces with the weight the controller assigned to it, not 1/m.

    Kills the mutation ``weight = 1 / len(members)`` in ``ReduceWorker._reduce``: the staleness
    (iteration) weights 0.5/0.3/0.2 differ from 1/3.
    """
    from types import SimpleNamespace

    from fl_r2sp.cluster.runtime.reduce import worker as rw

    seen: list[float] = []

    def fake_allreduce(flat: torch.Tensor, weight: float, *args: object) -> int:
        seen.append(weight)
        return 0

    monkeypatch.setattr(rw, "weighted_allreduce", fake_allreduce)
    groups = SimpleNamespace(drop=lambda names: None, get=lambda *a: "pg", abandon=lambda n: None)
    me = object.__new__(rw.ReduceWorker)
    base = SimpleNamespace(timeout_s=5.0)
    me.__dict__.update(w=0, groups=groups, flat=torch.zeros(3), backup=torch.zeros(3),
                       bucket=None, chunk_bytes=1024, base=base, board=None)  # fmt: skip
    out = me._reduce({"members": [3, 0, 2], "weights": [0.5, 0.3, 0.2], "pg": "g", "build": 0})
    assert out["ok"] and seen == [0.3]

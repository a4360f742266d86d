"""All-reduce benchmark, runtime part: dynamic gloo subgroups vs a full all-reduce.

Forks ``--ranks`` bare gloo processes on this machine. Every rank draws the same sequence of
``--groups`` random member sets of size ``--p`` (a shared seed) and the members of each set
reduce a ``--mb`` MB float32 vector with
:func:`~fl_r2sp.cluster.runtime.peer.subgroups.weighted_allreduce` on a ``ProcessGroupGloo`` built
on a ``PrefixStore`` (the runtime's way). Three regimes:

* ``cached``: the controller-side :class:`GroupRegistry` (capacity 64) plans every group, so a
  member set is built once and reused;
* ``uncached``: every reduce builds a fresh group and drops it afterwards (capacity 0);
* ``leak``: every reduce builds a fresh group and keeps it (what not caching or destroying
  costs).

Groups run one at a time (a barrier of all ranks before each), so the times exclude waiting
for a partner that is busy elsewhere. Reported per regime: median build time (the collective
creation), median reduce time, and each rank's thread and file-descriptor counts after the
groups (Linux ``/proc/self``); and the median of a full ``dist.all_reduce`` of the same
vector over the default group.

Usage::

    python benchmarks/bench_allreduce_runtime.py              # 4 ranks, p = 2, 100 groups, 1 MB
    python benchmarks/bench_allreduce.py --runtime            # the same, after the simulator part
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.local import free_port
from fl_r2sp.cluster.runtime.peer.subgroups import GroupRegistry, SubgroupCache, weighted_allreduce

REGIMES: dict[str, int] = {"cached": 64, "uncached": 0, "leak": -1}


def _counts() -> tuple[int, int]:
    return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))


def _regime(rank: int, world: int, ns: argparse.Namespace, name: str, cap: int
            ) -> dict[str, Any]:  # fmt: skip
    store = dist.distributed_c10d._get_default_store()
    cache = SubgroupCache(store, rank, timeout_s=60.0)
    reg = GroupRegistry(max(cap, 0))
    rng = random.Random(11)
    flat = torch.ones(int(ns.mb * 1e6) // 4)
    build, reduce = [], []
    dist.barrier()
    before = _counts()
    for i in range(ns.groups):
        members = sorted(rng.sample(range(world), ns.p))
        if cap >= 0:
            plan = reg.plan(members)
            pg_id, fresh, drops = plan.pg_id, plan.build, plan.drops.get(rank, [])
        else:
            pg_id, fresh, drops = f"{name}-{i}", True, []
        pg_id = f"{name}/{pg_id}"  # fresh rendezvous keys per regime
        dist.barrier()  # one group at a time: times exclude waiting for a busy partner
        if rank not in members:
            continue
        cache.drop([f"{name}/{d}" for d in drops])
        t0 = time.perf_counter()
        pg = cache.get(pg_id, members, fresh)
        t1 = time.perf_counter()
        weighted_allreduce(flat, 1.0 / ns.p, pg)
        t2 = time.perf_counter()
        reduce.append(t2 - t1)
        if fresh:
            build.append(t1 - t0)
        if cap == 0:
            cache.drop([pg_id])
    dist.barrier()
    after = _counts()
    cache.clear()
    return {"build_ms": build, "reduce_ms": reduce, "before": before, "after": after}


def _rank(rank: int, world: int, url: str, ns: argparse.Namespace, out: Any) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    flat = torch.ones(int(ns.mb * 1e6) // 4)
    full = []
    for _ in range(20):
        t0 = time.perf_counter()
        dist.all_reduce(flat)
        full.append(time.perf_counter() - t0)
    res: dict[str, Any] = {"rank": rank, "full_ms": full}
    for name, cap in REGIMES.items():
        res[name] = _regime(rank, world, ns, name, cap)
    out.put(res)
    dist.barrier()
    dist.destroy_process_group()


def _ms(xs: list[float]) -> float | None:
    return round(1e3 * statistics.median(xs), 2) if xs else None


def runtime_report(ranks: int = 4, p: int = 2, groups: int = 100, mb: float = 1.0
                   ) -> dict[str, Any]:  # fmt: skip
    """Run the benchmark; return medians (ms) and per-rank thread/fd counts per regime."""
    ns = argparse.Namespace(p=p, groups=groups, mb=mb)
    ctx = mp.get_context("fork")
    out = ctx.SimpleQueue()
    url = f"tcp://127.0.0.1:{free_port()}"
    procs = [ctx.Process(target=_rank, args=(r, ranks, url, ns, out)) for r in range(ranks)]
    for proc in procs:
        proc.start()
    results = [out.get() for _ in range(ranks)]
    for proc in procs:
        proc.join(60)
    report: dict[str, Any] = {
        "ranks": ranks, "p": p, "groups": groups, "mb": mb,
        "full_allreduce_ms": _ms([x for r in results for x in r["full_ms"][2:]]),
    }  # fmt: skip
    for name in REGIMES:
        rows = [r[name] for r in results]
        report[name] = {
            "build_ms": _ms([x for r in rows for x in r["build_ms"]]),
            "builds_per_rank": [len(r["build_ms"]) for r in rows],
            "reduce_ms": _ms([x for r in rows for x in r["reduce_ms"]]),
            "threads_before_after": [(r["before"][0], r["after"][0]) for r in rows],
            "fds_before_after": [(r["before"][1], r["after"][1]) for r in rows],
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--p", type=int, default=2)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--mb", type=float, default=1.0)
    ns = parser.parse_args()
    report = runtime_report(ns.ranks, ns.p, ns.groups, ns.mb)
    print(f"runtime: {ns.ranks} gloo ranks, {ns.groups} groups of {ns.p}, {ns.mb} MB")
    print(f"  full all-reduce (default group): median {report['full_allreduce_ms']} ms")
    for name in REGIMES:
        print(f"  {name:8s} {json.dumps(report[name])}")


if __name__ == "__main__":
    main()

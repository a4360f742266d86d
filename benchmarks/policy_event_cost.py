"""Policy decision cost per client update with 1,000 simulated clients.

Runs each shipped policy, built by the factory from a RunConfig as the runner
builds it, alone (no Flower, no network) under a tiny virtual-time loop: every
client trains for an exponential time after each model it receives and replies
with a random delta. Prints microseconds of policy time per update (excluding
the loop's own bookkeeping) and the model size. The loop is a stand-in, not the
runner, so that the time measured is the policy's alone and the deltas are not
zero: a timing-only run echoes the model, which switches the outlier filter off.
Whole runs through the runner are timed by ``bench_server.py loop``.

    .venv/bin/python benchmarks/policy_event_cost.py [--clients 1000] [--dim 100000]
"""

from __future__ import annotations

import argparse
import heapq
import time

import numpy as np

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.base import Send, Timer, Update
from fl_r2sp.fl.policies.factory import make_policy


def run(strategy: str, clients: int, dim: int, updates: int, seed: int) -> float:
    """Return policy seconds per update for ``updates`` client updates."""
    cfg = RunConfig(strategy=strategy, num_partitions=clients, num_groups=8)  # type: ignore[arg-type]
    policy = make_policy(cfg, range(clients), frozenset(range(0, clients, 4)))
    rng = np.random.default_rng(seed)
    deltas = rng.normal(scale=0.01, size=(16, dim)).astype(np.float32)
    events: list[tuple[float, int, int, object]] = []  # (time, kind, seq, payload)
    jobs: dict[int, tuple[int, np.ndarray]] = {}
    seq = 0
    spent = 0.0

    def schedule(now: float, decisions: list) -> None:
        nonlocal seq
        for d in decisions:
            if isinstance(d, Send):
                for cid in d.cids:
                    jobs[cid] = (d.tag, d.weights)
                    heapq.heappush(events, (now + rng.exponential(1.0), 1, seq, cid))
                    seq += 1
            elif isinstance(d, Timer):
                heapq.heappush(events, (d.at, 0, seq, d.key))
                seq += 1

    t0 = time.perf_counter()
    schedule(0.0, policy.start(0.0, np.zeros(dim, np.float32), range(clients)))
    spent += time.perf_counter() - t0
    done = 0
    while events and done < updates:
        now, kind, _, payload = heapq.heappop(events)
        if kind == 0:
            t0 = time.perf_counter()
            out = policy.on_timer(now, payload)
            spent += time.perf_counter() - t0
        else:
            cid = int(payload)  # type: ignore[arg-type]
            tag, sent = jobs.pop(cid)
            up = Update(cid, sent + deltas[done % len(deltas)], 1, tag)
            t0 = time.perf_counter()
            out = policy.on_update(now, up)
            spent += time.perf_counter() - t0
            done += 1
        schedule(now, out)
    return spent / max(done, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=100_000, help="model size (floats)")
    parser.add_argument("--updates", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{args.clients} clients, model {args.dim} floats ({args.dim * 4 / 1e6:.1f} MB)")
    for strategy in ("fl-r2sp", "bsp", "asp", "fedasync", "fedbuff"):
        cost = run(strategy, args.clients, args.dim, args.updates, args.seed)
        print(f"{strategy:9s} {cost * 1e6:9.1f} us policy time per update")


if __name__ == "__main__":
    main()

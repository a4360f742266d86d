"""Server benchmarks (overhead, FedAvg, loop cost, contention); every figure is a ratio
measured side by side.

    .venv/bin/python benchmarks/bench_server.py overhead
    .venv/bin/python benchmarks/bench_server.py fedavg
    .venv/bin/python benchmarks/bench_server.py loop
    .venv/bin/python benchmarks/bench_server.py contention

(a) ``overhead``: a Flower virtual-time run vs a bare PyTorch loop; (b) ``fedavg``: our BSP
vs Flower's ``FedAvg.start()``; (c) ``loop``: event-loop cost per update, 1,000 clients;
(d) ``contention``: FL-R²SP vs BSP on paper-ec2.

(a) and (b) start `flwr run` (a private FLWR_HOME; the SuperLink is stopped
afterwards); their wall times are the strategies' own (start-up of Flower and
Ray excluded, and reported separately).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fl_r2sp.fl.clients.runtime import data_for, job_seed  # noqa: E402
from fl_r2sp.fl.config import RunConfig  # noqa: E402
from fl_r2sp.fl.flower.processes import flwr_bin, local_superlink_env, stop_local_superlink  # noqa: E402
from fl_r2sp.fl.server.evaluation import initial_weights  # noqa: E402
from fl_r2sp.fl.server.runner import run  # noqa: E402
from fl_r2sp.models import build_model, resolve_model_name  # noqa: E402
from fl_r2sp.training import set_torch_threads, train_local  # noqa: E402


def flwr_run(overrides: str, supernodes: int, home: Path, run_dir: Path) -> dict:
    """`flwr run .` with ``overrides``; returns the run's summary.json plus start-up time."""
    cmd = [
        str(flwr_bin()),
        "run",
        ".",
        "--stream",
        "--federation-config",
        f"num-supernodes={supernodes}",
        "--run-config",
        f"{overrides} run-dir='{run_dir}' plots=false",
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=ROOT, env=local_superlink_env(home), capture_output=True, text=True, timeout=1800
    )
    total = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"flwr run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    newest = max(run_dir.iterdir(), key=lambda p: p.stat().st_mtime)
    out = json.loads((newest / "summary.json").read_text())["summary"]
    out["process_seconds"] = total
    return out


def bare_loop(cfg: RunConfig, jobs: list[tuple[int, int]]) -> float:
    """Wall seconds of a plain PyTorch loop training the same (client, job) list."""
    set_torch_threads(cfg.torch_threads)
    data = data_for(cfg)
    model = build_model(resolve_model_name(cfg.model, cfg.dataset), data.train.num_classes)
    w0 = initial_weights(cfg)
    from fl_r2sp.models.weights import set_flat_weights

    started = time.perf_counter()
    for cid, index in jobs:
        set_flat_weights(model, w0)
        part = data.client(cid)
        train_local(
            model,
            part.x,
            part.y,
            cfg.local_iterations,
            cfg.batch_size,
            cfg.lr,
            seed=job_seed(cfg.seed, cid, index),
        )
    return time.perf_counter() - started


def bench_overhead(tau: int, updates: int, dataset: str) -> None:
    keys = {
        "strategy": "fl-r2sp",
        "num-partitions": 16,
        "num-groups": 4,
        "dataset": dataset,
        "local-iterations": tau,
        "max-updates": updates,
        "eval-every": updates,
    }
    if dataset != "digits":
        from fl_r2sp.datasets import shared_data_dir

        keys.update({"data-dir": str(shared_data_dir() or ""), "max-train-samples": 8000})
    over = " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in keys.items())
    cfg = RunConfig.from_run_config(keys)
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as rd:
        try:
            s = flwr_run(over, 16, Path(home), Path(rd))
        finally:
            stop_local_superlink(home)
    inproc = run(cfg, write=False, progress=False)
    jobs = sorted(
        {(r["cid"], r["job"]) for r in inproc.events.jobs if r.get("dispatch") is not None}
    )
    # The bare loop trains as many jobs as the framework did (every job with a reply).
    bare = bare_loop(cfg, jobs[: int(s["replies_received"])])
    bare_in = bare * inproc.summary["replies_received"] / s["replies_received"]
    print(
        f"(a) {dataset} tau={tau}: {s['replies_received']} client jobs trained | bare PyTorch "
        f"{bare:.2f}s | Flower simulation strategy {s['wall_seconds']:.2f}s "
        f"({s['wall_seconds'] / bare:.2f}x) | in-process runner "
        f"{inproc.summary['wall_seconds']:.2f}s for {inproc.summary['replies_received']} jobs "
        f"({inproc.summary['wall_seconds'] / bare_in:.2f}x); flwr process incl. start-up "
        f"{s['process_seconds']:.1f}s"
    )


def bench_fedavg(rounds: int, tau: int) -> None:
    common = (
        f"num-partitions=8 num-groups=1 fraction=1.0 aggregation='weighted' delay='none' "
        f"local-iterations={tau} max-updates={rounds} eval-every=1"
    )
    res = {}
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as rd:
        try:
            for strat in ("fedavg", "bsp"):
                res[strat] = flwr_run(f"strategy='{strat}' {common}", 8, Path(home), Path(rd))
        finally:
            stop_local_superlink(home)
    fa, bsp = res["fedavg"]["wall_seconds"], res["bsp"]["wall_seconds"]
    print(
        f"(b) {rounds} rounds x 8 clients, tau={tau}: FedAvg.start() {fa:.2f}s, "
        f"our BSP {bsp:.2f}s -> throughput ratio BSP/FedAvg = {fa / bsp:.2f}x; "
        f"final accuracy {res['fedavg']['final_accuracy']:.4f} "
        f"vs {res['bsp']['final_accuracy']:.4f}"
    )


def bench_loop(clients: int, updates: int) -> None:
    # Global updates per scheme so that each sees tens of thousands of client updates.
    scale = {"bsp": 1, "fl-r2sp": 16, "asp": clients, "fedbuff": clients // 10}
    for strat, extra in (
        ("bsp", {}),
        ("fl-r2sp", {"num_groups": 16}),
        ("asp", {}),
        ("fedbuff", {}),
    ):
        cfg = RunConfig(
            strategy=strat,
            dataset="cifar10",
            model="cnn",
            timing_only=True,
            num_partitions=clients,
            max_updates=updates * scale[strat],
            eval_every=10**9,
            local_iterations=100,
            network="paper-ec2",
            **extra,
        )
        started = time.perf_counter()
        out = run(cfg, write=False, progress=False)
        wall = time.perf_counter() - started
        n = out.summary["num_completed"]
        print(
            f"(c) {strat:8s} {clients} clients, CNN 62k params: {n} client updates in {wall:.2f}s "
            f"-> {1e6 * wall / n:.0f} us per update (loop + policy + network + in-process client)"
        )


def bench_contention(clients: int, updates: int) -> None:
    rows = {}
    for strat, m in (("bsp", 1), ("fl-r2sp", clients // 16)):
        for profile in ("paper-ec2", "paper-ec2-fcfs"):
            cfg = RunConfig(
                strategy=strat,
                num_groups=m,
                dataset="cifar10",
                model="cnn",
                timing_only=True,
                num_partitions=clients,
                local_iterations=100,
                network=profile,
                max_updates=updates * max(m, 1),
                eval_every=10**6,
            )
            rows[(strat, profile)] = run(cfg, write=False, progress=False).summary
    print(
        f"(d) {clients} clients, CNN 0.25 MB, tau=100, groups of 16 (paper: pull 2.73 vs 0.38 s, "
        "push 0.38 vs 0.34 s, round 10.69 vs 8.31 s)"
    )
    for (strat, profile), s in rows.items():
        print(
            f"    {strat:8s} {profile:15s} pull {s['avg_pull_s']:.3f}s push {s['avg_push_s']:.3f}s "
            f"round {s['avg_round_s']:.2f}s cycle {s['avg_cycle_s']:.2f}s"
        )
    for profile in ("paper-ec2", "paper-ec2-fcfs"):
        b, f = rows[("bsp", profile)], rows[("fl-r2sp", profile)]
        comm_b, comm_f = b["avg_pull_s"] + b["avg_push_s"], f["avg_pull_s"] + f["avg_push_s"]
        print(
            f"    {profile}: BSP/FL-R²SP pull ratio {b['avg_pull_s'] / f['avg_pull_s']:.1f}x, "
            f"comm (push+pull) reduction {1 - comm_f / comm_b:.1%}"
        )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("what", choices=["overhead", "fedavg", "loop", "contention", "all"])
    p.add_argument("--tau", type=int, default=100)
    p.add_argument("--updates", type=int, default=40)
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--dataset", default="digits")
    a = p.parse_args()
    np.seterr(all="ignore")
    if a.what in ("overhead", "all"):
        bench_overhead(a.tau, a.updates, a.dataset)
    if a.what in ("fedavg", "all"):
        bench_fedavg(10, a.tau)
    if a.what in ("loop", "all"):
        bench_loop(a.clients, a.updates)
    if a.what in ("contention", "all"):
        bench_contention(128, 30)


if __name__ == "__main__":
    main()

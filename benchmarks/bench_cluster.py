"""Cluster-mode benchmark: the shipped runtime against raw gloo, R²SP against BSP, the bucket.

Three measurements (and a fourth for GPU machines), printed side by side with their goals:

(a) PS overhead. The runtime (``python -m fl_r2sp.cluster``, ASP, scripted zero compute so
    only communication remains) against raw gloo point-to-point with the same message size
    and number of workers (a PS rank with one thread per worker doing ``recv`` then ``send``,
    launched by ``torchrun --standalone``), alternated ``--a-repeats`` times;
    medians of the per-iteration times. Goal: runtime iteration time <= 1.2x raw.
(b) R²SP vs BSP mean iteration time with a throttled PS link (``--server-bandwidth``), 1 PS +
    8 workers, a model whose transfers dominate (``mlp-wide``, 4.9 MB). Goal: R²SP >= 25 %
    shorter (the paper: ~30 % for AlexNet/VGG16).
(c) The token bucket on real loopback transfers: workers push (then pull) chunked messages
    through the runtime's ``recv_chunked``/``send_chunked`` with the PS charging one ingress
    (egress) bucket; the measured PS rate against the cap. Goal: within 5 %.
(d) Only with ``--only d``, for a GPU machine: 8 workers sharing one GPU (``--d-devices cuda``)
    on ResNet-32, samples/s per worker (overall and compute only).

The first iteration of every worker (connection set-up, first-touch allocation) is dropped
from (a) and (b). Numbers on a shared 2-core VM are CPU-bound and noisy (about +-30 % run to
run for raw loopback throughput); rerun before trusting a single figure.

Usage::

    python benchmarks/bench_cluster.py                 # all three, about 3 minutes on 2 cores
    python benchmarks/bench_cluster.py --only b --iterations 12 --bandwidth 40
    python benchmarks/bench_cluster.py --only d            # on a CUDA machine
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.launcher import launch
from fl_r2sp.cluster.models import build_cluster_model, param_count
from fl_r2sp.cluster.runtime.common.protocol import HEADER
from fl_r2sp.cluster.runtime.common.throttle import TokenBucket, recv_chunked, send_chunked
from fl_r2sp.cluster.schemes import scheme_params
from fl_r2sp.cluster.telemetry import read_rows

RESULT = "BENCH-RESULT "
PUSH, PUSH_REST, PULL, PULL_REST = 20, 21, 22, 23


# ----------------------------------------------------------------------------------------
# Rank side (run under torch.distributed.run): raw gloo PS and the bucket measurement.
# ----------------------------------------------------------------------------------------
def _raw_ps(workers: int, numel: int, iters: int) -> None:
    """One thread per worker: receive its push, send the shard back (no apply, no headers)."""

    def serve(w: int) -> None:
        buf = torch.zeros(numel)
        for _ in range(iters):
            dist.recv(buf, src=w, tag=PUSH)
            dist.send(buf, w, tag=PULL)

    threads = [threading.Thread(target=serve, args=(w,)) for w in range(1, workers + 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def _raw_worker(numel: int, iters: int) -> list[float]:
    grad, params, times = torch.ones(numel), torch.zeros(numel), []
    for _ in range(iters):
        t0 = time.perf_counter()
        dist.send(grad, 0, tag=PUSH)
        dist.recv(params, src=0, tag=PULL)
        times.append(time.perf_counter() - t0)
    return times


def _bucket_ps(workers: int, numel: int, iters: int, cap_mb: float, chunk: int) -> dict[str, Any]:
    """Ingress phase (all workers push), then egress phase (PS sends to all); rates in MB/s."""
    rates: dict[str, Any] = {}
    for phase in ("in", "out"):
        bucket = TokenBucket.from_mb_s(cap_mb, burst_bytes=chunk)

        def serve(w: int, bucket: TokenBucket = bucket, phase: str = phase) -> None:
            buf = torch.zeros(numel)
            for _ in range(iters):
                if phase == "in":
                    recv_chunked(buf, PUSH, PUSH_REST, src=w, chunk_bytes=chunk, bucket=bucket)
                else:
                    send_chunked(buf, w, PULL, PULL_REST, chunk_bytes=chunk, bucket=bucket)

        dist.barrier()
        t0 = time.perf_counter()
        threads = [threading.Thread(target=serve, args=(w,)) for w in range(1, workers + 1)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - t0
        # The bucket starts full: its first burst is free, so it is not counted against time.
        moved = bucket.bytes_taken - bucket.burst
        rates[f"{phase}_mb_s"] = moved / elapsed / 1e6
        rates[f"{phase}_slept_s"] = bucket.seconds_slept
    return rates


def _bucket_worker(numel: int, iters: int, chunk: int) -> None:
    msg = torch.ones(numel)
    dist.barrier()
    for _ in range(iters):
        send_chunked(msg, 0, PUSH, PUSH_REST, chunk_bytes=chunk)
    dist.barrier()
    for _ in range(iters):
        recv_chunked(msg, PULL, PULL_REST, src=0, chunk_bytes=chunk)


def rank_main(args: argparse.Namespace) -> None:
    """Entry point of one rank (``--rank-mode raw|bucket``)."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.rank_timeout))
    rank, workers = dist.get_rank(), dist.get_world_size() - 1
    numel = args.msg_bytes // 4
    out: dict[str, Any] = {"rank": rank}
    if args.rank_mode == "raw":
        if rank == 0:
            _raw_ps(workers, numel, args.rank_iters)
        else:
            out["times"] = _raw_worker(numel, args.rank_iters)
    elif rank == 0:
        out.update(_bucket_ps(workers, numel, args.rank_iters, args.cap, args.chunk_kb * 1024))
    else:
        _bucket_worker(numel, args.rank_iters, args.chunk_kb * 1024)
    print(RESULT + json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()


# ----------------------------------------------------------------------------------------
# Driver side: launch ranks, launch the runtime, compare.
# ----------------------------------------------------------------------------------------
def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(cmd: list[str], timeout: float) -> str:
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"command failed (rc={proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def launch_ranks(
    mode: str, world: int, msg_bytes: int, iters: int, extra: list[str], timeout: float
) -> list[dict[str, Any]]:
    """Run this file as ``world`` ranks through torch's elastic launcher; their results."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node", str(world), str(Path(__file__).resolve()), "--rank-mode", mode,
           "--msg-bytes", str(msg_bytes), "--rank-iters", str(iters), *extra]  # fmt: skip
    out = _run(cmd, timeout)
    return [json.loads(line[len(RESULT) :]) for line in out.splitlines() if line.startswith(RESULT)]


def raw_iteration_times(workers: int, msg_bytes: int, iters: int, timeout: float) -> list[float]:
    """Push+pull round trips of raw gloo, every worker's first iteration dropped."""
    results = launch_ranks("raw", workers + 1, msg_bytes, iters + 1, [], timeout)
    return [t for r in results for t in r.get("times", [])[1:]]


def bucket_rates(
    workers: int, msg_bytes: int, iters: int, cap: float, chunk_kb: int, timeout: float
) -> dict[str, Any]:
    """PS ingress/egress rates through the token bucket (see ``_bucket_ps``)."""
    extra = ["--cap", str(cap), "--chunk-kb", str(chunk_kb)]
    results = launch_ranks("bucket", workers + 1, msg_bytes, iters, extra, timeout)
    return next(r for r in results if r["rank"] == 0)


def runtime_iteration_times(cfg: ClusterConfig, skip: int) -> list[float]:
    """Launch the shipped runtime; ``t_end - t_start`` of every iteration >= ``skip``."""
    summary = launch(cfg)
    rows = read_rows(Path(summary["run_dir"]) / "workers.csv")
    return [float(r["t_end"]) - float(r["t_start"]) for r in rows if int(r["iteration"]) >= skip]


def _base(args: argparse.Namespace, runs: Path, **kw: Any) -> ClusterConfig:
    fields: dict[str, Any] = dict(
        servers=1, model=args.model, dataset="synthetic", batch_size=args.batch_size,
        run_dir=str(runs), eval_samples=0, progress_s=0.0, plots=False, timeout_s=120.0,
        run_timeout_s=600.0, seed=args.seed,
    )  # fmt: skip
    fields.update(kw)
    return ClusterConfig(**fields)


def part_a(args: argparse.Namespace, runs: Path, msg_bytes: int) -> dict[str, float]:
    """(a) runtime (ASP, zero compute) vs raw gloo, same message and worker count."""
    n, iters = args.a_workers, args.a_iterations
    zero = tuple((0.0,) * (iters + 1) for _ in range(n))
    cfg = _base(args, runs, workers=n, scheme=scheme_params("asp"), max_iterations=iters + 1,
                scripted_compute=zero)  # fmt: skip
    raw_times: list[float] = []
    our_times: list[float] = []
    for _ in range(args.a_repeats):  # alternate, so that load drifts hit both alike
        raw_times += raw_iteration_times(n, msg_bytes, iters, args.launch_timeout)
        our_times += runtime_iteration_times(cfg, skip=1)
    # Medians: CPU contention on a shared box adds a long tail that the mean would follow.
    raw, ours = statistics.median(raw_times), statistics.median(our_times)
    mb = n * 2 * msg_bytes / 1e6  # PS in + out per round of every worker
    return {"raw_iter_s": raw, "runtime_iter_s": ours, "raw_ps_mb_s": mb / raw,
            "runtime_ps_mb_s": mb / ours, "ratio": ours / raw}  # fmt: skip


def part_b(args: argparse.Namespace, runs: Path) -> dict[str, float]:
    """(b) BSP vs R²SP mean iteration time, 1 PS + N workers, PS link capped."""
    out: dict[str, float] = {}
    for scheme in ("bsp", "r2sp"):
        cfg = _base(args, runs, workers=args.b_workers, scheme=scheme_params(scheme),
                    max_iterations=args.iterations + args.skip,
                    server_bandwidth_mb_s=args.bandwidth)  # fmt: skip
        out[f"{scheme}_iter_s"] = statistics.fmean(runtime_iteration_times(cfg, args.skip))
    out["ratio"] = out["r2sp_iter_s"] / out["bsp_iter_s"]
    return out


def part_c(args: argparse.Namespace) -> dict[str, Any]:
    """(c) PS ingress and egress through the bucket on loopback, against the cap."""
    size = args.c_mb * 1_000_000
    rates = bucket_rates(args.c_workers, size, args.c_messages, args.cap, args.chunk_kb,
                         args.launch_timeout)  # fmt: skip
    return {**rates, "cap_mb_s": args.cap}


def part_d(args: argparse.Namespace, runs: Path) -> dict[int, dict[str, float]]:
    """(d) ``--d-workers`` workers sharing ``--d-devices`` on ResNet-32 (ASP, unthrottled):
    per worker, samples/s over its whole iterations and over its compute time alone."""
    cfg = _base(args, runs, workers=args.d_workers, scheme=scheme_params("asp"),
                model="resnet32", dataset=args.d_dataset, batch_size=args.d_batch_size,
                max_iterations=args.d_iterations + 1, devices=tuple(args.d_devices.split(",")),
                data_dir=args.data_dir)  # fmt: skip
    summary = launch(cfg)
    rows = [r for r in read_rows(Path(summary["run_dir"]) / "workers.csv")
            if int(r["iteration"]) >= 1]  # fmt: skip
    out: dict[int, dict[str, float]] = {}
    for w in sorted({int(r["worker"]) for r in rows}):
        mine = [r for r in rows if int(r["worker"]) == w]
        samples = sum(int(r["batch_size"]) for r in mine)
        span = max(float(r["t_end"]) for r in mine) - min(float(r["t_start"]) for r in mine)
        compute = sum(float(r["compute_s"]) for r in mine)
        out[w] = {"samples_per_s": samples / span, "compute_samples_per_s": samples / compute,
                  "device": mine[0].get("device", "?")}  # type: ignore[dict-item]  # fmt: skip
    return out


def report(title: str, rows: list[tuple[str, str]]) -> None:
    print(f"\n({title})")
    for label, value in rows:
        print(f"  {label:<44} {value}", flush=True)


def run_parts(
    args: argparse.Namespace, runs: Path, msg_bytes: int
) -> list[tuple[str, str, str, bool | None]]:
    """Run the parts in ``args.only``; each gives (name, value, goal, met) for the summary."""
    ms = lambda s: f"{s * 1e3:8.1f} ms"  # noqa: E731
    verdicts: list[tuple[str, str, str, bool | None]] = []
    if "a" in args.only:
        a = part_a(args, runs, msg_bytes)
        report(f"a: PS vs raw gloo, loopback, {args.a_workers} workers x {args.a_iterations} "
               f"iterations x {args.a_repeats} launches each", [
            ("raw gloo median iteration / PS in+out", f"{ms(a['raw_iter_s'])} "
             f"{a['raw_ps_mb_s']:8.1f} MB/s"),
            ("runtime ASP median iteration / PS in+out", f"{ms(a['runtime_iter_s'])} "
             f"{a['runtime_ps_mb_s']:8.1f} MB/s"),
        ])  # fmt: skip
        verdicts.append(("(a) runtime / raw gloo iteration", f"{a['ratio']:.2f}x", "<= 1.2x",
                         a["ratio"] <= 1.2))  # fmt: skip
    if "b" in args.only:
        b = part_b(args, runs)
        report(f"b: 1 PS + {args.b_workers} workers, {args.model}, PS link {args.bandwidth:g} "
               f"MB/s each way, {args.iterations} iterations after {args.skip}", [
            ("BSP mean iteration", f"{b['bsp_iter_s']:.3f} s"),
            ("R2SP mean iteration", f"{b['r2sp_iter_s']:.3f} s"),
        ])  # fmt: skip
        verdicts.append(("(b) R2SP / BSP mean iteration", f"{b['ratio']:.2f} "
                         f"({(1 - b['ratio']) * 100:.0f}% shorter)", "<= 0.75 (>= 25% shorter)",
                         b["ratio"] <= 0.75))  # fmt: skip
    if "c" in args.only:
        c = part_c(args)
        worst = max(abs(c[k] / c["cap_mb_s"] - 1) for k in ("in_mb_s", "out_mb_s"))
        report(f"c: token bucket, loopback, {args.c_workers} workers x {args.c_messages} x "
               f"{args.c_mb} MB each way, chunks {args.chunk_kb} KiB", [
            ("cap", f"{c['cap_mb_s']:.1f} MB/s"),
            ("PS ingress / egress measured", f"{c['in_mb_s']:.1f} / {c['out_mb_s']:.1f} MB/s"),
        ])  # fmt: skip
        verdicts.append(("(c) bucket rate vs cap, worst", f"{worst * 100:.1f}% off", "<= 5%",
                         worst <= 0.05))  # fmt: skip
    if "d" in args.only:
        d = part_d(args, runs)
        report(f"d: {args.d_workers} workers on {args.d_devices}, resnet32, {args.d_dataset}, "
               f"batch {args.d_batch_size}, {args.d_iterations} iterations", [
            (f"worker {w} ({v['device']}) samples/s: overall / compute only",
             f"{v['samples_per_s']:8.1f} / {v['compute_samples_per_s']:8.1f}")
            for w, v in d.items()
        ])  # fmt: skip
        total = sum(v["samples_per_s"] for v in d.values())
        verdicts.append(("(d) all workers together", f"{total:.0f} samples/s", "(measurement)",
                         None))  # fmt: skip
    return verdicts


def main(args: argparse.Namespace) -> int:
    """Run the parts and print their ratios side by side with the goals."""
    msg_bytes = 4 * (param_count(build_cluster_model(args.model)) + HEADER)
    print(f"model {args.model}: {msg_bytes / 1e6:.2f} MB per transfer (1 PS holds every parameter)")
    with tempfile.TemporaryDirectory(prefix="bench_cluster_") as tmp:
        runs = Path(args.keep_runs) if args.keep_runs else Path(tmp)
        verdicts = run_parts(args, runs, msg_bytes)
    print("\nsummary")
    for name, value, goal, met in verdicts:
        verdict = "-" if met is None else "met" if met else "NOT met"
        print(f"  {name:<34} {value:<22} goal {goal:<26} {verdict}")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Flags (defaults keep the whole run near 3 minutes on 2 cores)."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    a = p.add_argument
    a("--only", default="abc", help="parts to run, e.g. 'b' or 'ac'; 'd' needs a GPU [abc]")
    a("--model", default="mlp-wide", help="model whose size sets the messages [mlp-wide]")
    a("--batch-size", type=int, default=32, help="(b) batch size [32]")
    a("--seed", type=int, default=0, help="seed [0]")
    a("--a-workers", type=int, default=4, help="(a) workers [4]")
    a("--a-iterations", type=int, default=50, help="(a) measured iterations per worker [50]")
    a("--a-repeats", type=int, default=2, help="(a) alternating raw/runtime launches [2]")
    a("--b-workers", type=int, default=8, help="(b) workers [8]")
    a("--iterations", type=int, default=6, help="(b) measured iterations per worker [6]")
    a("--skip", type=int, default=2, help="(b) warm-up iterations not measured [2]")
    a("--bandwidth", type=float, default=40.0, help="(b) PS link cap, MB/s [40]")
    a("--c-workers", type=int, default=4, help="(c) workers [4]")
    a("--c-messages", type=int, default=4, help="(c) messages per worker and direction [4]")
    a("--c-mb", type=int, default=2, help="(c) message size in MB [2]")
    a("--cap", type=float, default=40.0, help="(c) bucket cap, MB/s [40]")
    a("--chunk-kb", type=int, default=256, help="(c) chunk size, KiB [256]")
    a("--d-workers", type=int, default=8, help="(d) workers sharing the device(s) [8]")
    a("--d-devices", default="cuda", help="(d) worker devices, round-robin [cuda]")
    a("--d-dataset", default="synthetic", help="(d) synthetic or cifar10 [synthetic]")
    a("--d-batch-size", type=int, default=128, help="(d) batch size [128]")
    a("--d-iterations", type=int, default=20, help="(d) measured iterations per worker [20]")
    a("--data-dir", default="", help="(d) CIFAR-10 folder for --d-dataset cifar10")
    a("--launch-timeout", type=float, default=300.0, help="limit per raw launch, s [300]")
    a("--keep-runs", default="", help="keep the runtime's run directories here")
    # Rank side (this file started by torch.distributed.run); not for users.
    a("--rank-mode", choices=("raw", "bucket"), help=argparse.SUPPRESS)
    a("--msg-bytes", type=int, default=0, help=argparse.SUPPRESS)
    a("--rank-iters", type=int, default=0, help=argparse.SUPPRESS)
    a("--rank-timeout", type=float, default=120.0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    _args = parse_args()
    if _args.rank_mode:
        rank_main(_args)
    else:
        sys.exit(main(_args))

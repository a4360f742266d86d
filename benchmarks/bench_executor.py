"""Client-job executors against the physical limit: one federated round, samples/s.

One round = every one of ``--clients`` clients trains one job of tau
``--iterations`` SGD steps of batch ``--batch-size`` on its partition of
CIFAR-10 (the paper's mixed-alpha partition; synthetic CIFAR-shaped data if
the real files are absent), all released at once, as BSP releases them. Each
executor the runner ships (``make_executor``) computes the round; printed
side by side with:

* the physical limit: the same number of samples as one model trained with
  batch ``--limit-batch`` on ``--limit-threads`` threads (``train_local``'s
  step; further thread counts print extra rows, e.g. ``--limit-threads 2 1``:
  a multi-threaded loop suffers most when other jobs load the machine);
* each executor's samples/s and its time as a multiple of the limit's (goal
  on CPU: <= 1.3x), the start-up cost (worker processes, data on device)
  apart;
* the weight differences from the serial replies (processes: 0; batched:
  the float tolerance): max and median over clients of each client's largest
  |difference|, and the max relative to the client's largest update entry,
  next to the same figures for serial jobs whose start weights were nudged
  by one ulp (``--ulp-clients`` clients: the scale of rounding noise);
* peak resident memory (main process + workers) for ``--memory-clients``
  clients, each measured in a fresh process with tau ``--memory-iterations``.

``--kernels`` runs the batched executor once per kernel variant, side by
side: ``grouped`` or ``bmm`` convolutions (``executor-conv``), ``+graphs``
(``executor-cuda-graphs``, CUDA only), ``+compile`` / ``+reduce-overhead`` /
``+autotune`` (``executor-compile``: default, reduce-overhead,
max-autotune-no-cudagraphs). Under the timing table every batched row's
speed is printed as a fraction of the limit's against the goal (CNN 0.5,
ResNet20 0.8). ``--warm-rounds 1`` computes one untimed round first with the same
executor, so compilation and first-use costs land in "start s", not in the
timed round. A variant that fails prints its error and the others go on.

Run::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_executor.py           # ~3 min, 2 cores
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_executor.py --full    # tau = 100
    # on a GPU: the limit and the batched executor on CUDA; --repeat 2 also checks
    # that a rerun gives the same bits ("rerun" column)
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_executor.py --device cuda \\
        --backends serial batched --full --repeat 2
    # the batched executor's kernel variants side by side (compile costs kept apart)
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_executor.py --device cuda \\
        --backends batched --kernels grouped bmm graphs bmm+graphs bmm+compile --warm-rounds 1 \\
        --full --limit-batch 4096 --ulp-clients 0 --memory-clients

Timings on a shared machine are noisy: the load average is printed; compare
rows of one run only.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from fl_r2sp.datasets.paths import resolve_data_dir  # noqa: E402
from fl_r2sp.fl.clients.runtime import ClientRuntime, data_for, runtime_for  # noqa: E402
from fl_r2sp.fl.config import RunConfig  # noqa: E402
from fl_r2sp.fl.protocol import Job, Reply  # noqa: E402
from fl_r2sp.fl.server.evaluation import initial_weights  # noqa: E402
from fl_r2sp.fl.server.executor import Executor, make_executor  # noqa: E402
from fl_r2sp.fl.server.executor.batched import resolve_device  # noqa: E402
from fl_r2sp.models import build_model  # noqa: E402
from fl_r2sp.training import batch_schedule, set_torch_threads  # noqa: E402
from fl_r2sp.training.augment import apply_crop_flip, draw_crop_flip  # noqa: E402

BACKENDS = ("serial", "processes", "batched")
#: Goal of the batched executor's speed as a fraction of the limit's, by model.
GOALS = {"cnn": 0.5, "resnet20": 0.8}
#: ``--kernels`` token -> run-config keys it sets.
KERNEL_TOKENS: dict[str, dict[str, object]] = {
    "grouped": {"executor_conv": "grouped"},
    "bmm": {"executor_conv": "bmm"},
    "graphs": {"executor_cuda_graphs": True},
    "compile": {"executor_compile": "default"},
    "reduce-overhead": {"executor_compile": "reduce-overhead"},
    "autotune": {"executor_compile": "max-autotune-no-cudagraphs"},
}


#: Model -> data set it trains on (the paper's pairing); only CIFAR-10 has a synthetic stand-in.
DATASET_OF = {"lstm": "kws", "cnn": "cifar10", "resnet20": "cifar10"}


def data_dir(choice: str, clients: int, model: str = "cnn") -> str:
    """CIFAR-10 (or, for the LSTM, Speech Commands) where the loaders look ($FL_R2SP_DATA,
    data/, ../shared/data), else a synthetic CIFAR-shaped archive (own cache)."""
    found = resolve_data_dir(None)
    if DATASET_OF.get(model) == "kws":
        if choice == "synthetic" or not (found / "speech_commands").is_dir():
            raise SystemExit(f"--model lstm needs Speech Commands in {found}/speech_commands")
        return str(found)
    if choice != "synthetic" and (found / "cifar10").is_dir():
        return str(found)
    if choice == "cifar10":
        raise SystemExit(f"--data cifar10: no cifar10 folder in {found} ($FL_R2SP_DATA)")
    from fl_r2sp.datasets.synthetic import write_cifar_npz

    root = Path(tempfile.mkdtemp(prefix="bench-executor-"))
    atexit.register(shutil.rmtree, root, True)
    os.environ["FL_R2SP_CACHE"] = str(root / "cache")  # keep the user cache clean
    for split, n in (("train", max(50 * clients, 6400)), ("test", 100)):
        write_cifar_npz(root, split, n=n, seed=0)
    return str(root)


def kernel_keys(variant: str) -> dict[str, object]:
    """Run-config keys of a ``--kernels`` variant such as ``bmm+graphs``."""
    keys: dict[str, object] = {}
    for token in variant.split("+"):
        if token not in KERNEL_TOKENS:
            raise SystemExit(f"--kernels {variant}: {token!r} is not one of {list(KERNEL_TOKENS)}")
        keys.update(KERNEL_TOKENS[token])
    return keys


def rows_of(args: argparse.Namespace) -> list[tuple[str, str, dict[str, object]]]:
    """(row label, executor, run-config keys) of every executor row: the batched executor
    once per ``--kernels`` variant (once, as configured, without the flag)."""
    rows: list[tuple[str, str, dict[str, object]]] = []
    for name in args.backends:
        if name == "batched" and args.kernels:
            rows += [(f"batched[{v}]", name, kernel_keys(v)) for v in args.kernels]
        else:
            rows.append((name, name, {}))
    return rows


def round_cfg(
    args: argparse.Namespace, executor: str, clients: int, tau: int, **keys: object
) -> RunConfig:
    """The benchmark round's configuration (CNN, the paper's partition, lr 0.01); ``keys``
    set further run-config keys (a kernel variant's)."""
    return RunConfig(
        dataset=DATASET_OF.get(args.model, "cifar10"),
        data_dir=args.data_dir,
        model=args.model,
        num_partitions=clients,
        num_groups=1,
        local_iterations=tau,
        batch_size=args.batch_size,
        lr=0.01,
        augment=args.augment,
        executor=executor,
        executor_workers=args.workers,
        executor_stack=args.stack,
        compute_device=args.device if executor == "batched" else "cpu",
        max_updates=1,
        plots=False,
    ).replace(**keys)


def limit_rate(args: argparse.Namespace, cfg: RunConfig, samples: int, threads: int) -> float:
    """Samples/s of one model on the same sample count in batches of --limit-batch.

    The loop is ``train_local``'s step for step (batch cut, optional crop and
    flip, forward, backward, SGD step) without its one-off input checks, on
    the batched executor's device (``--device``), on ``threads`` CPU threads.
    """
    dev = resolve_device(args.device)
    train = data_for(cfg).train
    x, y = torch.from_numpy(train.x).to(dev), torch.from_numpy(train.y).to(dev)
    steps = max(1, samples // args.limit_batch)
    previous = set_torch_threads(threads)
    try:
        model = build_model(args.model, seed=0).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(0)
        batches = list(batch_schedule(len(x), args.limit_batch, steps + 2, gen))
        for k, idx in enumerate(batches):
            if k == 2:  # after two warm-up steps
                sync(dev)
                start = time.perf_counter()
            xb = x[idx.to(dev)]
            if args.augment:
                offsets, flips = draw_crop_flip(len(idx), gen)
                xb = apply_crop_flip(xb, offsets.to(dev), flips.to(dev))
            loss = F.cross_entropy(model(xb), y[idx.to(dev)])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sync(dev)
        return steps * args.limit_batch / (time.perf_counter() - start)
    finally:
        set_torch_threads(previous)


def sync(dev: torch.device) -> None:
    """Wait for queued device work (timings on CUDA)."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def run_round(
    cfg: RunConfig, warm_rounds: int = 0
) -> tuple[dict[int, Reply], float, float, dict[str, int]]:
    """(replies by client, start-up s, round s, peak RSS KiB) of one executor.

    ``warm_rounds`` untimed rounds of the same jobs come first (in start-up):
    they carry compilation and graph warm-up, the timed round the steady state.
    """
    runtime: ClientRuntime = runtime_for(cfg)
    weights = initial_weights(cfg)
    started = time.perf_counter()
    ex = make_executor(cfg, runtime)
    try:
        wait_ready = getattr(ex, "wait_ready", None)
        if wait_ready is not None:
            wait_ready()
        for _ in range(warm_rounds):
            one_round(ex, cfg.num_partitions, weights)
        ready = time.perf_counter()
        replies = one_round(ex, cfg.num_partitions, weights)
        done = time.perf_counter()
        rss = ex.peak_rss_kb()
    finally:
        ex.close()
    return replies, ready - started, done - ready, rss


def one_round(ex: Executor, clients: int, weights: np.ndarray) -> dict[int, Reply]:
    """Every client's job from ``weights``, all released at once; the replies by client."""
    replies: dict[int, Reply] = {}
    for cid in range(clients):
        ex.submit(Job(cid=cid, index=0, tag=0, weights=weights))
    while ex.outstanding():
        for reply in ex.collect(timeout=10.0):
            if not reply.ok:
                raise RuntimeError(f"client {reply.cid}: {reply.error}")
            replies[reply.cid] = reply
    return replies


def nudged_replies(cfg: RunConfig, cids: list[int]) -> dict[int, Reply]:
    """Serial replies of ``cids`` from start weights nudged up by one ulp."""
    runtime = runtime_for(cfg)
    w = np.nextafter(initial_weights(cfg), np.float32(np.inf)).astype(np.float32)
    return {cid: runtime.run(Job(cid, 0, 0, w)) for cid in cids}


def same_weights(a: Reply, b: Reply) -> bool:
    """True when two replies carry bit-identical weights."""
    return a.weights is not None and b.weights is not None and np.array_equal(a.weights, b.weights)


def diff_stats(ref: dict[int, Reply], other: dict[int, Reply], start: np.ndarray) -> str:
    """Max and median over clients of max |weight difference|, and the max relative to the
    client's largest update entry (|serial - start|)."""
    per, rel = [], []
    for cid, reply in other.items():
        a, b = ref[cid].weights, reply.weights
        assert a is not None and b is not None
        per.append(float(np.abs(b - a).max()))
        rel.append(per[-1] / float(np.abs(a - start).max()))
    return f"{max(per):>9.2g} {float(np.median(per)):>9.2g} {max(rel):>9.2g}"


def measure(
    args: argparse.Namespace, cfg0: RunConfig, samples: int
) -> tuple[dict[str, float], dict[str, tuple[dict[int, Reply], float]], dict[str, str]]:
    """Best samples/s per row, first replies and start-up per row, rerun equality or error.

    Rows are timed in ``--repeat`` interleaved passes (limit rows, then each
    executor row, then again), so a slow spell of other load hits every row
    alike; each row keeps its best pass. A row that raises is reported by its
    error (third dict) and not run again.
    """
    best: dict[str, float] = {}
    first: dict[str, tuple[dict[int, Reply], float]] = {}
    notes: dict[str, str] = {}
    for _ in range(args.repeat):
        for t in args.limit_threads:
            rate = limit_rate(args, cfg0, samples, t)
            best[f"limit-{t}"] = max(best.get(f"limit-{t}", 0.0), rate)
        for label, name, keys in rows_of(args):
            if notes.get(label, "").startswith("FAILED"):
                continue
            cfg = round_cfg(args, name, args.clients, args.iterations, **keys)
            try:
                replies, startup, secs, _ = run_round(cfg, args.warm_rounds)
            except Exception as exc:  # one failing variant must not cost the others' figures
                notes[label] = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                continue
            best[label] = max(best.get(label, 0.0), samples / secs)
            if label in first:
                again = all(same_weights(first[label][0][c], r) for c, r in replies.items())
                ok = notes.get(label, "same") == "same" and again
                notes[label] = "same" if ok else "DIFFERENT"
            else:
                first[label] = (replies, startup)
    return best, first, notes


def timing_table(args: argparse.Namespace) -> None:
    """The timing table (the format ``experiments/executor_figures.py`` parses: 28-character
    labels, these columns), then the batched rows against the goal."""
    samples = args.clients * args.iterations * args.batch_size
    cfg0 = round_cfg(args, "serial", args.clients, args.iterations)
    data_for(cfg0)  # load (and cache) before anything is timed
    best, first, notes = measure(args, cfg0, samples)
    limit = best[f"limit-{args.limit_threads[0]}"]  # the reference of the "x limit" column
    print(
        f"\nround: {args.clients} clients x tau {args.iterations} x batch {args.batch_size} = "
        f"{samples:,} samples, model {args.model}, augment {args.augment}, "
        f"best of {args.repeat} interleaved pass(es)"
    )
    head = (
        f"{'':<28} {'samples/s':>10} {'x limit':>8} {'round s':>8} {'start s':>8} "
        f"{'max|dw|':>9} {'med|dw|':>9} {'max rel':>9}" + (f" {'rerun':>9}" * (args.repeat > 1))
    )
    print(head + "\n" + "-" * len(head))
    for t in args.limit_threads:
        rate = best[f"limit-{t}"]
        label = f"limit (batch {args.limit_batch}, {t} thr)"
        print(f"{label:<28} {rate:>10.0f} {limit / rate:>8.2f} {samples / rate:>8.1f}")
    start = initial_weights(cfg0)
    ref = first["serial"][0] if "serial" in first else None
    for label, name, _ in rows_of(args):
        if label not in first:
            continue  # failed: listed under the table
        replies, startup = first[label]
        rate = best[label]
        diff = "" if ref is None else diff_stats(ref, replies, start)
        rerun = "" if args.repeat < 2 else f" {notes[label]:>9}"
        if label == name != "serial":
            label = f"{name} ({_procs(args, name)} proc.)"
        print(
            f"{label:<28} {rate:>10.0f} {limit / rate:>8.2f} {samples / rate:>8.1f} "
            f"{startup:>8.1f} {diff}{rerun}"
        )
    if ref is not None and args.ulp_clients:
        cids = list(range(0, args.clients, max(1, args.clients // args.ulp_clients)))
        noise = diff_stats(ref, nudged_replies(cfg0, cids[: args.ulp_clients]), start)
        label = f"serial, start +1 ulp ({min(len(cids), args.ulp_clients)} cl.)"
        print(f"{label:<28} {'':>10} {'':>8} {'':>8} {'':>8} {noise}")
    goal_table(args, {k: v / limit for k, v in best.items()}, notes)


def goal_table(args: argparse.Namespace, of_limit: dict[str, float], notes: dict[str, str]) -> None:
    """Each batched row's samples/s as a fraction of the limit's, against the model's goal;
    failed rows with their error."""
    rows = [(label, name) for label, name, _ in rows_of(args) if name == "batched"]
    if not rows:
        return
    goal = GOALS.get(args.model)
    print(
        f"\nbatched against the limit on {resolve_device(args.device)} ({args.model}; goal: "
        f"{'none set' if goal is None else f'>= {goal:g}'} of the limit's samples/s; "
        f"{args.warm_rounds} untimed warm round(s) first):"
    )
    for label, _ in rows:
        if label not in of_limit:
            print(f"  {label:<28} {notes[label]}")
            continue
        met = "" if goal is None else ("goal met" if of_limit[label] >= goal else "goal not met")
        print(f"  {label:<28} {of_limit[label]:>6.2f} of the limit  {met}")


def _procs(args: argparse.Namespace, name: str) -> int:
    """Processes that train: the pool's size, or 1 for batched on CUDA (one process)."""
    from fl_r2sp.fl.server.executor import resolve_workers

    if name == "batched" and resolve_device(args.device).type == "cuda":
        return 1
    return resolve_workers(args.workers)


def memory_table(args: argparse.Namespace) -> None:
    print(f"\npeak resident memory, MiB (fresh process each, tau {args.memory_iterations}):")
    head = f"{'executor':<10} {'clients':>7} {'main':>7} {'workers':>17} {'total':>7} {'device':>7}"
    print(head + "\n" + "-" * len(head))
    for name in args.backends:
        for clients in args.memory_clients:
            cmd = [sys.executable, __file__, "--measure-memory", name, str(clients), *sys.argv[1:]]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=True)
            rss = json.loads(out.stdout.strip().splitlines()[-1])
            workers = [v / 1024 for k, v in rss.items() if k.startswith("worker")]
            shown = " + ".join(f"{w:.0f}" for w in workers) or "-"
            total = rss["main"] / 1024 + sum(workers)
            dev = f"{rss['cuda'] / 1024:>7.0f}" if "cuda" in rss else f"{'-':>7}"  # CUDA peak
            main = rss["main"] / 1024
            print(f"{name:<10} {clients:>7} {main:>7.0f} {shown:>17} {total:>7.0f} {dev}")


def measure_memory(args: argparse.Namespace, name: str, clients: int) -> None:
    """Child mode: run one round and print the peak RSS dict as JSON."""
    _, _, _, rss = run_round(round_cfg(args, name, clients, args.memory_iterations))
    print(json.dumps(rss))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=128)
    p.add_argument("--iterations", type=int, default=20, help="tau (the paper's: 100, --full)")
    p.add_argument("--full", action="store_true", help="tau = 100, the paper's round")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--model", default="cnn")
    p.add_argument("--augment", action="store_true", help="random crop + flip")
    p.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument(
        "--kernels",
        nargs="+",
        default=[],
        metavar="VARIANT",
        help="batched executor once per variant: grouped|bmm, +graphs, +compile, "
        "+reduce-overhead, +autotune (max-autotune-no-cudagraphs), e.g. bmm+graphs",
    )
    p.add_argument(
        "--warm-rounds",
        type=int,
        default=0,
        help="untimed rounds per executor before the timed one (compilation, graph warm-up)",
    )
    p.add_argument("--workers", type=int, default=0, help="executor-workers (0 = per core)")
    p.add_argument("--stack", type=int, default=0, help="executor-stack (0 = auto)")
    p.add_argument(
        "--device",
        default="cpu",
        choices=("auto", "cpu", "cuda"),
        help="compute-device of the batched executor",
    )
    p.add_argument("--limit-batch", type=int, default=512)
    p.add_argument(
        "--limit-threads",
        type=int,
        nargs="+",
        default=[2],
        help="threads of the limit loop; the first is the reference (add 1 to see one core's rate)",
    )
    p.add_argument(
        "--repeat", type=int, default=1, help="interleaved timing passes; each row keeps its best"
    )
    p.add_argument(
        "--ulp-clients",
        type=int,
        default=8,
        help="clients whose serial job is rerun from start weights + 1 ulp (0 = off)",
    )
    p.add_argument("--memory-clients", type=int, nargs="*", default=[128, 1000])
    p.add_argument("--memory-iterations", type=int, default=2)
    p.add_argument("--data", default="auto", choices=("auto", "cifar10", "synthetic"))
    p.add_argument(
        "--measure-memory", nargs=2, metavar=("EXECUTOR", "CLIENTS"), help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    if args.full:
        args.iterations = 100
    for variant in args.kernels:
        kernel_keys(variant)  # refuse a misspelt variant before anything runs
        if len(f"batched[{variant}]") > 28:  # the parsed table's label width
            raise SystemExit(f"--kernels {variant}: too long a label, at most 19 characters")
    return args


def main() -> None:
    args = parse()
    args.data_dir = data_dir(args.data, max([args.clients, *args.memory_clients]), args.model)
    if args.measure_memory:
        measure_memory(args, args.measure_memory[0], int(args.measure_memory[1]))
        return
    set_torch_threads(1)
    print(
        f"load average before: {os.getloadavg()[0]:.2f}, cores: {os.cpu_count()}, "
        f"data: {args.data_dir}"
    )
    timing_table(args)
    if args.memory_clients:
        memory_table(args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

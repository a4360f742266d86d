"""Local-training throughput of every model on this machine's CPU.

For each registered model and torch thread count, times one local round of
``train_local`` (default 100 iterations of batch 32, as the paper's tau) on
synthetic data of the model's input shape, after a short warm-up, and prints
samples/s, ms per iteration and the round time. These figures calibrate how
long laptop-scale experiments take and what per-iteration compute the
emulation should assume.

Run::

    .venv/bin/python benchmarks/bench_training.py
    .venv/bin/python benchmarks/bench_training.py --models cnn resnet20 --threads 1 --iterations 50

Timings on a shared machine are noisy: the load average is printed with
the table; compare rows of one run only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from fl_r2sp.models import MODELS, build_model, model_input_shape, serialized_size  # noqa: E402
from fl_r2sp.training import set_torch_threads, train_local  # noqa: E402


def synthetic(name: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Standard-normal features of the model's input shape and uniform labels."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, *model_input_shape(name)), dtype=np.float32)
    return x, rng.integers(0, 10, n).astype(np.int64)


def time_round(name: str, iterations: int, batch_size: int, augment: bool) -> float:
    """Seconds of one ``train_local`` round after a 3-iteration warm-up."""
    x, y = synthetic(name, 16 * batch_size)
    model = build_model(name)
    train_local(model, x, y, iterations=3, batch_size=batch_size, lr=0.01)
    start = time.perf_counter()
    train_local(model, x, y, iterations=iterations, batch_size=batch_size, lr=0.01, augment=augment)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=sorted(MODELS), choices=sorted(MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--iterations", type=int, default=100, help="tau of the timed round")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--augment", action="store_true", help="crop+flip for image models")
    args = parser.parse_args()

    print(f"load average before: {os.getloadavg()[0]:.2f}, cores: {os.cpu_count()}")
    header = f"{'model':<11} {'MB':>6} {'thr':>3} {'samples/s':>10} {'ms/iter':>8} {'round s':>8}"
    print(header)
    print("-" * len(header))
    for name in args.models:
        size_mb = serialized_size(build_model(name)) / 1e6
        aug = args.augment and len(model_input_shape(name)) == 3
        for k in args.threads:
            set_torch_threads(k)
            secs = time_round(name, args.iterations, args.batch_size, aug)
            rate = args.iterations * args.batch_size / secs
            ms = 1000 * secs / args.iterations
            print(f"{name:<11} {size_mb:>6.3f} {k:>3} {rate:>10.0f} {ms:>8.1f} {secs:>8.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

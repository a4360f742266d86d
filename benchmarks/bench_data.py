"""Decode-and-cache time of each real dataset: cold (decode + write cache) vs cached.

Usage::

    .venv/bin/python benchmarks/bench_data.py                 # the resolver's data folder
    .venv/bin/python benchmarks/bench_data.py --data-dir DIR --datasets cifar10 kws

Each dataset gets a fresh temporary array cache (``$FL_R2SP_CACHE``), so the
first load really decodes. "cold" is the first load of train + test (decode,
write the ``.npy`` cache, normalize); "cached" is the best of ``--repeats``
further loads (read ``.npy`` + normalize). It also times the paper partition
of each training set into 32 clients. Prints one row per dataset and the
cold/cached ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fl_r2sp.datasets import (  # noqa: E402  (after the sys.path line)
    load_dataset,
    make_partition,
    resolve_data_dir,
)


def _load_both(name: str, data_dir: Path) -> tuple[float, int, int]:
    start = time.perf_counter()
    train = load_dataset(name, "train", data_dir=data_dir)
    test = load_dataset(name, "test", data_dir=data_dir)
    return time.perf_counter() - start, len(train), len(test)


def _dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def bench(name: str, data_dir: Path, repeats: int) -> str:
    """One table row for dataset ``name`` (or why it was skipped)."""
    cache = Path(tempfile.mkdtemp(prefix="fl_r2sp_bench_"))
    os.environ["FL_R2SP_CACHE"] = str(cache)
    try:
        try:
            cold, n_train, n_test = _load_both(name, data_dir)
        except FileNotFoundError as exc:
            return f"{name:<10} skipped: {str(exc).splitlines()[0]}"
        cached = min(_load_both(name, data_dir)[0] for _ in range(repeats))
        labels = load_dataset(name, "train", data_dir=data_dir).y
        start = time.perf_counter()
        make_partition("paper", labels, None, 32, seed=0)
        part_ms = (time.perf_counter() - start) * 1e3
        return (
            f"{name:<10} {n_train:>7} {n_test:>6} {cold:>8.2f} {cached:>8.3f} "
            f"{cold / cached:>7.1f}x {_dir_mb(cache):>8.1f} {part_ms:>9.1f}"
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="data directory (default: fl_r2sp.datasets.resolve_data_dir's)",
    )
    parser.add_argument("--datasets", nargs="+", default=["digits", "cifar10", "kws", "kws-audio"])
    parser.add_argument("--repeats", type=int, default=3, help="cached loads to time (best of)")
    args = parser.parse_args()
    data_dir = args.data_dir or resolve_data_dir(None)
    import torch  # noqa: F401  (import cost kept out of the kws-audio cold time)

    print(f"data dir: {data_dir}   cpus: {os.cpu_count()}   load avg: {os.getloadavg()[0]:.1f}")
    print(
        f"{'dataset':<10} {'train':>7} {'test':>6} {'cold s':>8} {'cached s':>8} "
        f"{'ratio':>8} {'cache MB':>8} {'part. ms':>9}"
    )
    for name in args.datasets:
        print(bench(name, data_dir, args.repeats), flush=True)


if __name__ == "__main__":
    main()

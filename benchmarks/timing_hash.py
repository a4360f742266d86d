"""Canonical hash of the experiments' timing items, to show a refactor is bit-identical.

Runs the timing-only items (Table V, Fig. 16, Fig. 17, Table II, Fig. 18) into a
fresh results folder and hashes what they produced, wall-clock fields left out:

* per run (keyed by its label and seed, not by the config hash, so that a new
  spelling of the config keeps the key): the job rows, the policy records, the
  link traces (dtype, shape and bytes of each array), the summary and the
  history;
* per item: ``runs.csv``, ``summary.csv`` and ``summary.json``.

JSON is hashed in canonical form (sorted keys, ``repr`` floats). PNGs are left
out (their metadata varies). Compare two trees by running the same command in
each; ``--list`` prints one hash per component, to find what differs::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/timing_hash.py               # laptop, seed 0
    OMP_NUM_THREADS=1 PYTHONPATH=<other tree> .venv/bin/python benchmarks/timing_hash.py

The modules come from ``sys.path`` (``PYTHONPATH`` first); the paths used are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import hashlib
import importlib
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

#: Timing-only items, in ``experiments/run_all.sh`` order.
ITEMS = ("table5", "fig16", "fig17", "table2", "fig18")

#: Keys that hold wall-clock readings (not deterministic), dropped at any depth.
WALL_KEYS = frozenset({"wall", "wall_seconds", "run_seconds"})

_RUN_FILE = re.compile(r"^(?P<stem>.+-s\d+)-[0-9a-f]{12}(?P<suffix>\..+)$")


def drop_wall(obj: Any) -> Any:
    """``obj`` with every mapping key in :data:`WALL_KEYS` removed, recursively."""
    if isinstance(obj, dict):
        return {k: drop_wall(v) for k, v in obj.items() if k not in WALL_KEYS}
    if isinstance(obj, list):
        return [drop_wall(v) for v in obj]
    return obj


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes of ``obj`` (sorted keys, no whitespace, wall keys dropped)."""
    return json.dumps(drop_wall(obj), sort_keys=True, separators=(",", ":")).encode()


def _npz_bytes(path: Path) -> bytes:
    h = hashlib.sha256()
    with np.load(path) as data:
        for name in sorted(data.files):
            arr = np.ascontiguousarray(data[name])
            h.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
            h.update(arr.tobytes())
    return h.digest()


def _run_component(path: Path) -> bytes:
    suffix = _RUN_FILE.match(path.name).group("suffix")  # type: ignore[union-attr]
    if suffix == ".json":
        rec = json.loads(path.read_text())
        return canonical({"summary": rec["summary"], "history": rec["history"]})
    if suffix.endswith(".json.gz"):
        with gzip.open(path, "rt") as fh:
            return canonical(json.load(fh))
    if suffix == ".traces.npz":
        return _npz_bytes(path)
    raise ValueError(f"unexpected run file {path.name}")


def components(out: Path) -> Iterator[tuple[str, bytes]]:
    """(name, content bytes) of every hashed component under ``out``, sorted by name."""
    found: dict[str, bytes] = {}
    for path in (out / "_runs").iterdir():
        m = _RUN_FILE.match(path.name)
        if m is None:
            raise ValueError(f"unexpected file {path} in the runs cache")
        found[f"_runs/{m['stem']}{m['suffix']}"] = _run_component(path)
    for item in ITEMS:
        for name in ("runs.csv", "summary.csv"):
            path = out / item / name
            if path.exists():
                with open(path, newline="") as fh:
                    found[f"{item}/{name}"] = canonical(list(csv.reader(fh)))
        path = out / item / "summary.json"
        if path.exists():
            found[f"{item}/summary.json"] = canonical(json.loads(path.read_text()))
    yield from sorted(found.items())


def digest(out: Path, listing: bool = False) -> str:
    """sha256 over (name, sha256(content)) of :func:`components`; prints each if ``listing``."""
    total = hashlib.sha256()
    for name, content in components(out):
        part = hashlib.sha256(content).hexdigest()
        total.update(f"{name}\0{part}\n".encode())
        if listing:
            print(f"  {part[:16]}  {name}")
    return total.hexdigest()


def run_items(scale: str, seeds: str, out: Path, items: tuple[str, ...]) -> None:
    """Run ``items`` at ``scale`` into ``out`` (their own progress lines are discarded)."""
    for item in items:
        module = importlib.import_module(f"experiments.flr2sp.{item}")
        with contextlib.redirect_stdout(io.StringIO()):
            module.main(["--scale", scale, "--seeds", seeds, "--out", str(out)])
        print(f"  ran {item}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", default="laptop", help="experiments scale (default: laptop)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    p.add_argument("--items", default=",".join(ITEMS), help="timing items (default: all five)")
    p.add_argument("--out", default="", help="results folder, kept (default: a temporary one)")
    p.add_argument("--list", action="store_true", help="print one hash per component")
    a = p.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    items = tuple(i for i in a.items.split(",") if i)
    unknown = set(items) - set(ITEMS)
    if unknown:
        p.error(f"not timing items: {sorted(unknown)}; choose from {', '.join(ITEMS)}")
    # Appended, not prepended: a tree on PYTHONPATH wins over this checkout.
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    import experiments
    import fl_r2sp

    print(f"code: {Path(fl_r2sp.__file__).parent}, {Path(experiments.__file__).parent}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.out) if a.out else Path(tmp)
        run_items(a.scale, a.seeds, out, items)
        print(f"timing items {','.join(items)}, scale {a.scale}, seeds {a.seeds}")
        print(f"sha256 {digest(out, a.list)}")


if __name__ == "__main__":
    main()

"""Shared plumbing of the experiment scripts: CLI, configs, cached runs, result IO.

Every item script does::

    args = parse_args("table5", __doc__)
    for seed in args.seeds:
        rec = cached_run(args, "timing", label, seed, strategy="bsp", model="cnn", ...)

:func:`cached_run` is the resume mechanism: a finished run is a JSON file
under ``<out>/_runs/`` keyed by a hash of its configuration and of the code that
computed it (:mod:`experiments.common.provenance`), so an interrupted script skips
what it already did, items that need the same run (Table V, Fig. 16, Fig. 17,
Fig. 18 at group size 16) share it, and a run of older code is reused only
when asked (``--reuse-runs any`` or ``FL_R2SP_REUSE_RUNS=any``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import logging
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import eta, execution, provenance
from experiments.common.conf import (
    DATASET_OF,
    DEFAULT_SEEDS,
    META_KEYS,
    SCALES,
    round_units,
    scale_settings,
)
from fl_r2sp.telemetry.rundir import atomic_write_bytes


@dataclass(frozen=True)
class Args:
    """Parsed command line of an item script."""

    item: str
    scale: str
    seeds: tuple[int, ...]
    out: Path
    only_models: tuple[str, ...] = ()
    skip_training: bool = False
    reuse: str = "current"
    #: How runs are computed (RunConfig fields): executor, compute_device,
    #: executor_workers. Not part of a run's cache key (:mod:`experiments.common.execution`).
    execution: tuple[tuple[str, Any], ...] = ()

    @property
    def item_dir(self) -> Path:
        """``<out>/<item>``, created on first use."""
        path = self.out / self.item
        path.mkdir(parents=True, exist_ok=True)
        return path


def parse_args(
    item: str, doc: str | None, argv: Sequence[str] | None = None, scales: Sequence[str] = SCALES
) -> Args:
    """Parse ``--scale``, ``--seeds``, ``--out`` (defaults: laptop, 0,1,2, records/results).

    ``scales`` are the ``--scale`` choices (default: :data:`~experiments.common.conf.SCALES`;
    an item may add a setting such as :data:`~experiments.common.conf.MAIN_JOB`).
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m experiments.flr2sp.{item}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--scale", choices=scales, default="laptop")
    parser.add_argument(
        "--seeds",
        default=",".join(map(str, DEFAULT_SEEDS)),
        help="comma-separated seeds (default: 0,1,2)",
    )
    parser.add_argument("--out", default="records/results", help="results root")
    parser.add_argument(
        "--models", default="", help="comma-separated subset of the scale's models (default: all)"
    )
    parser.add_argument(
        "--skip-training",
        action="store_true",
        help="start no real-training run: use the cached ones, leave out the rest",
    )
    parser.add_argument(
        "--reuse-runs",
        choices=provenance.REUSE_MODES,
        default=None,
        help="current: only runs of the current code (default, or "
        f"${provenance.REUSE_ENV}); any: else the newest of any code",
    )
    execution.add_flags(parser)
    ns = parser.parse_args(argv)
    try:
        seeds = tuple(int(s) for s in ns.seeds.split(",") if s.strip())
    except ValueError:
        parser.error(f"--seeds must be comma-separated integers, got {ns.seeds!r}")
    if not seeds:
        parser.error("--seeds needs at least one seed")
    only = tuple(m for m in ns.models.split(",") if m.strip())
    return Args(
        item,
        ns.scale,
        seeds,
        Path(ns.out),
        only,
        ns.skip_training,
        provenance.reuse_mode(ns.reuse_runs),
        execution.picked(ns),
    )


#: Set to ``1`` for one line per central evaluation of each real-training run.
PROGRESS_ENV = "FL_R2SP_PROGRESS"


def show_progress() -> None:
    """Print the runner's progress lines: they go through the ``fl_r2sp`` logger at INFO, and
    the item scripts configure no logging (Python would show warnings only). Adds a handler
    writing to stdout, timestamped like :func:`say`, unless INFO lines already reach a handler
    (one of the logger's, or the root's: ``run_parallel`` labels its workers' lines there)."""
    logger = logging.getLogger("fl_r2sp")
    shown = logger.handlers or (logger.propagate and logging.getLogger().handlers)
    if shown and logger.isEnabledFor(logging.INFO):
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(message)s", "%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # not twice where the root logger has a handler of its own


def say(msg: str) -> None:
    """Progress line with a timestamp (flushed: the scripts run under nohup)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def data_dir() -> str:
    """``$FL_R2SP_DATA`` if set, else the fallback data folder (``shared_data_dir``), else ''."""
    env = os.environ.get("FL_R2SP_DATA")
    if env:
        return env
    from fl_r2sp.datasets import shared_data_dir

    found = shared_data_dir()
    return str(found) if found is not None else ""


def models(args: Args, family: str) -> tuple[str, ...]:
    """Models an item runs at this scale (``models`` of the scale settings, ``--models`` subset)."""
    known = tuple(scale_settings(family, args.scale)["models"])
    return tuple(m for m in known if not args.only_models or m in args.only_models)


def build_config(family: str, scale: str, seed: int, **diff: Any):
    """RunConfig of ``family`` at ``scale`` with the item's differences applied.

    ``diff`` may hold any RunConfig field plus ``rounds`` (override of the
    scale's). ``strategy='bsp'`` forces one group. ``dataset`` follows the
    model unless given. ``max_updates`` and ``eval_every`` are derived from
    ``rounds`` via :func:`round_units` (one evaluation per round).
    """
    from fl_r2sp.fl.config import RunConfig

    settings = scale_settings(family, scale)
    settings.update(diff)
    rounds = int(settings.pop("rounds"))
    for key in META_KEYS:
        settings.pop(key, None)
    settings.setdefault("dataset", DATASET_OF[settings.get("model", "cnn")])
    if settings["dataset"] != "digits":
        settings.setdefault("data_dir", data_dir())
    if settings.get("strategy") in ("bsp", "asp", "fedasync", "fedbuff"):
        settings["group_size"], settings["num_groups"] = 0, 1
    settings["seed"] = seed
    cfg = RunConfig(**settings)
    unit = round_units(cfg.strategy, cfg.num_partitions, cfg.groups, cfg.fraction, cfg.buffer_size)
    return cfg.replace(max_updates=rounds * unit, eval_every=unit)


#: Run-config keys that do not change a run's result (the execution keys: how a run is
#: computed, see :mod:`experiments.common.execution`).
_OUTPUT_ONLY = ("run-dir", "plots", "data-dir", *execution.KEYS)


def config_key(cfg: Any) -> str:
    """Stable 12-hex hash of the run-config keys that differ from their defaults.

    Leaving defaults out keeps cached runs valid when the engine gains a new
    knob whose default keeps the old behaviour; output-only keys (run dir,
    plots, data dir) are left out too. Accepts a RunConfig or its kebab-case dict.
    """
    from fl_r2sp.fl.config import RunConfig

    defaults = RunConfig.keys()
    items = cfg.items() if isinstance(cfg, Mapping) else cfg.to_run_config().items()
    d = {k: v for k, v in items if k not in _OUTPUT_ONLY and defaults.get(k, object()) != v}
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


def rekey_runs(out: Path) -> int:
    """Rename cached runs whose file key differs from the key of their config and code.

    For caches written under an older key scheme (the key is
    :func:`provenance.run_key` of :func:`config_key` and the record's code
    version); returns how many runs moved.
    """
    moved = 0
    for path in sorted((out / "_runs").glob("*.json")):
        rec = json.loads(path.read_text())
        ckey = config_key(rec["config"])
        key = provenance.run_key(ckey, rec.get("code_version"))
        if rec.get("key") == key:
            continue
        rec["key"] = key
        if "code_version" in rec:
            rec["config_key"] = ckey
        stem = f"{rec['label']}-s{rec['seed']}-{key}"
        for suffix in (".jobs.json.gz", ".records.json.gz", ".traces.npz"):
            old = path.with_suffix(suffix)
            if old.exists():
                old.replace(path.parent / f"{stem}{suffix}")
        (path.parent / f"{stem}.json").write_text(json.dumps(rec, default=_plain))
        path.unlink()
        moved += 1
    return moved


def cached_run(
    args: Args, family: str, label: str, seed: int, cached_only: bool = False, **diff: Any
) -> dict[str, Any] | None:
    """Run (or load) one configuration; return its record.

    The record is ``{"label", "key", "config", "summary", "history"}``; the
    job rows and the link traces are kept beside it and loaded by
    :func:`load_jobs` / :func:`load_traces`. With ``cached_only=True``
    (default False) a missing run is not started and None is returned.
    """
    cfg = build_config(family, args.scale, seed, **{**dict(args.execution), **diff})
    ckey = config_key(cfg)
    runs = args.out / "_runs"
    key = provenance.run_key(ckey, provenance.code_version())
    path = runs / f"{label}-s{seed}-{key}.json"
    # A run of the same code under an older name of its version (a pure move of files) is a
    # run of the current code (:mod:`experiments.common.same_code`).
    same = (runs / f"{label}-s{seed}-{provenance.run_key(ckey, v)}.json" for v in
            provenance.current_versions())  # fmt: skip
    found = next((p for p in same if _usable(p, family)), None)
    if found is None and args.reuse == "any":
        older = provenance.older_run(runs, label, seed, ckey, config_key)
        found = older if older is not None and _usable(older, family) else None
    if found is not None:
        rec = json.loads(found.read_text())
        provenance.note_used(rec)
        say(
            f"{args.item}: {eta.count() if not cached_only else ''} {label} seed {seed}: cached "
            f"({found.name}, code {rec.get('code_version', provenance.UNVERSIONED)})"
        )
        return rec
    if cached_only:
        return None
    from fl_r2sp.fl.server.runner import run

    say(
        f"{args.item}: {label} seed {seed}: running ({cfg.strategy}, {cfg.model}, "
        f"N={cfg.num_partitions}, M={cfg.groups}, max_updates={cfg.max_updates})"
    )
    started = time.perf_counter()
    # Progress lines (one per evaluation) only when asked: the item scripts run under nohup.
    progress = os.environ.get(PROGRESS_ENV, "") == "1"
    if progress:
        show_progress()
    out = run(cfg.replace(run_dir=str(runs)), write=False, progress=progress)
    runs.mkdir(parents=True, exist_ok=True)
    # Side files first, each whole by a rename; the record (the completion marker) last.
    for suffix, rows in (
        (".jobs.json.gz", out.events.jobs),
        (".records.json.gz", out.events.records),
    ):
        atomic_write_bytes(
            path.with_suffix(suffix), gzip.compress(json.dumps(rows, default=_plain).encode())
        )
    traces = io.BytesIO()
    arrays: dict[str, Any] = {
        f"{k}__{i}": a for k, pair in out.traces.items() for i, a in enumerate(pair)
    }
    np.savez_compressed(traces, **arrays)
    atomic_write_bytes(path.with_suffix(".traces.npz"), traces.getvalue())
    rec = provenance.stamp(
        {
            "label": label,
            "key": key,
            "seed": seed,
            "config": cfg.to_run_config(),
            "summary": out.summary,
            "history": out.history,
        },
        ckey,
        time.perf_counter() - started,
    )
    provenance.note_used(rec)
    # Atomic: an interrupted run leaves no half-written result, and no record without its files.
    atomic_write_bytes(path, json.dumps(rec, default=_plain).encode())
    took = time.perf_counter() - started
    say(f"{args.item}: {eta.count(took)} {label} seed {seed}: done in {took:.0f} s")
    return rec


def _usable(path: Path, family: str) -> bool:
    # Timing runs are re-summarised from their records, so a cache without them is stale.
    return path.exists() and (family != "timing" or path.with_suffix(".records.json.gz").exists())


def _runs_file(args: Args, rec: Mapping[str, Any], suffix: str) -> Path:
    return args.out / "_runs" / f"{rec['label']}-s{rec['seed']}-{rec['key']}{suffix}"


def load_jobs(args: Args, rec: Mapping[str, Any], what: str = "jobs") -> list[dict[str, Any]]:
    """Job rows (``what="jobs"``) or policy records (``"records"``) of a cached run."""
    with gzip.open(_runs_file(args, rec, f".{what}.json.gz"), "rt") as fh:
        return json.load(fh)


def load_traces(args: Args, rec: Mapping[str, Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Link traces of a cached run: name -> (times, bytes)."""
    data = np.load(_runs_file(args, rec, ".traces.npz"))
    names = {k.rsplit("__", 1)[0] for k in data.files}
    return {n: (data[f"{n}__0"], data[f"{n}__1"]) for n in names}


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def mean_std(values: Iterable[float | None]) -> tuple[float | None, float | None, int]:
    """Mean, sample std (0 for one value) and count of the non-None values."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not xs:
        return None, None, 0
    return float(np.mean(xs)), float(np.std(xs, ddof=1)) if len(xs) > 1 else 0.0, len(xs)


def aggregate(
    rows: Sequence[Mapping[str, Any]], by: Sequence[str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """Group ``rows`` by the ``by`` columns; add ``<m>_mean``, ``<m>_std`` and ``n`` (rows).

    Means and stds are over the rows where the metric is known (not None).
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in by), []).append(row)
    out = []
    for key, members in groups.items():
        agg: dict[str, Any] = dict(zip(by, key, strict=True), n=len(members))
        for m in metrics:
            agg[f"{m}_mean"], agg[f"{m}_std"], _ = mean_std(r.get(m) for r in members)
        out.append(agg)
    return out


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write dict rows (union of keys, first-seen order) as CSV; floats to 6 significant digits."""
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in keys})
    return path


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else v


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON (NumPy scalars converted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=_plain))
    return path


def finish(
    args: Args,
    rows: Sequence[Mapping[str, Any]],
    table: Sequence[Mapping[str, Any]],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write ``runs.csv`` (one row per run), ``summary.csv`` and ``summary.json``."""
    write_csv(args.item_dir / "runs.csv", rows)
    write_csv(args.item_dir / "summary.csv", table)
    write_json(
        args.item_dir / "summary.json",
        {
            "item": args.item,
            "scale": args.scale,
            "seeds": list(args.seeds),
            "table": table,
            **(extra or {}),
        },
    )
    provenance.write_provenance(args.item_dir)  # kept apart: summary.json stays code-independent
    say(f"{args.item}: wrote {args.item_dir}/summary.csv")
    for row in table:
        print("  " + ", ".join(f"{k}={_cell(v)}" for k, v in row.items()), file=sys.stdout)

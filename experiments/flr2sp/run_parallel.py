"""Compute the cached runs of Fig. 15 / Table IV and the outlier-scoring runs in parallel.

The item scripts compute their runs one after the other. On a machine with
many cores or a GPU, this driver starts each (scheme, seed, model) run, and
each (partition mode, seed) scoring run, in its own process, ``--jobs`` at a
time, into the same run cache (``<out>/_runs``). The item scripts then find
them there and only tabulate::

    # on a GPU machine: paper-size CNN, BSP and FL-R2SP with and without the filter
    python -m experiments.flr2sp.run_parallel --scale paper --models cnn --seeds 0 \\
        --schemes bsp,fl-r2sp,bsp-nofilter,fl-r2sp-nofilter --scoring paper,paper-strict \\
        --executor batched --compute-device cuda --jobs 6
    python -m experiments.flr2sp.fig15 --scale paper --models cnn --seeds 0 --skip-training

A run is exactly the one the item script would compute (same configuration,
same cache key); the executor and device only say how it is computed
(``experiments.common.run_cache``). Besides Fig. 15's schemes, ``--schemes`` takes the
filter-rule cases of :data:`FILTER_CASES` (FL-R²SP with one outlier rule, the same runs as
the filter-rule item's on the ``paper`` partition). ``--rounds R`` caps every scheme run at R
BSP-round equivalents: a different, labelled run (``...-roundsR``) that the item scripts
do not read, for models whose full paper-size run does not fit a GPU loan. ``--wall-limit``
stops what is still running after that many seconds (its run is lost; the finished ones stay
cached) and the driver exits 1 naming them.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from experiments.common.run_cache import Args, parse_args, say
from experiments.flr2sp.filter_rules import CASES, PARTITIONS

Task = tuple[str, str, int, str]  # (kind "scheme" | "scoring", name, seed, model)

#: FL-R²SP with one outlier rule on the paper partition, knob for knob the filter-rule
#: item's cases, so that a run computed here is the one that item reads: the
#: oracle ceiling (the known outliers excluded from the start) and the candidate default
#: (relative rule, k = 3 robust deviations, floor 0.1, first 4 group rounds unscored).
FILTER_CASES: dict[str, dict[str, Any]] = {
    f"fl-r2sp-{case}": {**CASES[case], **PARTITIONS["paper"]}
    for case in ("oracle", "relative-warmup")
}


def tasks(args: Args, schemes: list[str], scoring: list[str]) -> list[Task]:
    """Every run to compute, seed-major (the first seed gives a full picture first)."""
    from experiments.common.run_cache import models
    from experiments.flr2sp.fig15 import SCHEMES
    from experiments.flr2sp.outliers_scoring import MODES

    known = [*SCHEMES, *FILTER_CASES]
    unknown = [s for s in schemes if s not in known] + [m for m in scoring if m not in MODES]
    if unknown:
        raise SystemExit(
            f"unknown scheme or scoring mode {unknown}; schemes: {', '.join(known)}; "
            f"scoring modes: {', '.join(MODES)}"
        )
    out: list[Task] = []
    for seed in args.seeds:
        for model in models(args, "training"):
            out += [("scheme", s, seed, model) for s in schemes]
        scoring_model = "mlp" if args.scale == "smoke" else "cnn"
        out += [("scoring", m, seed, scoring_model) for m in scoring]
    return out


def compute(args: Args, task: Task, rounds: int = 0) -> dict[str, Any]:
    """Child process: compute (or find cached) one run; return its headline figures.

    ``rounds`` (default 0 = the scale's): round cap of a scheme run (a run of its own).
    """
    from experiments.flr2sp.fig15 import SCHEMES
    from experiments.flr2sp.outliers_scoring import run_of
    from experiments.flr2sp.runs import training

    kind, name, seed, model = task
    # The runner's progress lines (FL_R2SP_PROGRESS=1) go through logging: show them, labelled.
    logging.basicConfig(level=logging.INFO, format=f"[{_label(task)}] %(message)s", force=True)
    started = time.perf_counter()
    if kind == "scoring":
        rec = run_of(args, seed, name, model)
    else:  # a Fig. 15 scheme is fig15.scheme_run's run (same label and knobs)
        diff = dict(SCHEMES.get(name) or dict(strategy="fl-r2sp", **FILTER_CASES[name]))
        diff.update(dict(rounds=rounds) if rounds else {})
        rec = training(args, seed, diff.pop("strategy"), model, **diff)
    summary = (rec or {}).get("summary", {})
    return dict(
        wall_s=time.perf_counter() - started,
        stopped=summary.get("stopped"),
        converged_at=summary.get("converged_at"),
        final_accuracy=summary.get("final_accuracy"),
        virtual_time_s=summary.get("virtual_time_s"),
        updates=summary.get("global_updates"),
    )


def main(argv: list[str] | None = None) -> int:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--schemes", default="bsp,fl-r2sp", help="Fig. 15 scheme names")
    extra.add_argument("--scoring", default="", help="outlier-scoring partition modes")
    extra.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    extra.add_argument("--wall-limit", type=float, default=0.0, help="seconds (0 = none)")
    extra.add_argument(
        "--rounds", type=int, default=0, help="round cap of the scheme runs (0 = the scale's)"
    )
    ns, rest = extra.parse_known_args(argv)
    args = parse_args("run_parallel", __doc__, rest)
    todo = tasks(args, _names(ns.schemes), _names(ns.scoring))
    if ns.jobs < 1:
        raise SystemExit("--jobs must be >= 1")
    say(f"run_parallel: {len(todo)} runs, {ns.jobs} at a time, execution {dict(args.execution)}")
    deadline = time.monotonic() + ns.wall_limit if ns.wall_limit > 0 else None
    ctx = mp.get_context("spawn")  # CUDA cannot be used in forked children
    failed: list[str] = []
    with ProcessPoolExecutor(max_workers=ns.jobs, mp_context=ctx) as pool:
        running: dict[Future[dict[str, Any]], Task] = {
            pool.submit(compute, args, t, ns.rounds): t for t in todo
        }
        while running:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, _ = wait(running, timeout=left, return_when=FIRST_COMPLETED)
            if not done:  # wall limit: what still runs is lost
                failed += [f"{_label(t)} (wall limit)" for t in running.values()]
                for proc in list(getattr(pool, "_processes", {}).values()):
                    proc.terminate()
                pool.shutdown(wait=False, cancel_futures=True)
                break
            for fut in done:
                task = running.pop(fut)
                try:
                    say(f"run_parallel: {_label(task)}: {fut.result()}")
                except Exception as exc:  # report every failure, keep the others running
                    failed.append(f"{_label(task)} ({type(exc).__name__}: {exc})")
                    say(f"run_parallel: {_label(task)} FAILED: {exc}")
    if failed:
        print("not computed: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


def _names(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _label(task: Task) -> str:
    kind, name, seed, model = task
    return f"{kind} {name} {model} seed {seed}"


if __name__ == "__main__":
    sys.exit(main())

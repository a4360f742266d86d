"""Where the seconds go before the first iteration of a cluster run (not a timed test).

Usage::

    .venv/bin/python benchmarks/bench_startup.py                  # mlp, 4 workers, 1 PS
    .venv/bin/python benchmarks/bench_startup.py --model mlp-wide --workers 4 --repeats 2

Phases, each the best of ``--repeats``:

* ``import torch``, ``import torch.distributed`` and the rank entry
  (``fl_r2sp.cluster.rank``), each in a fresh interpreter (what every rank process or
  the forkserver pays once);
* ``data``: building the worker's dataset (``make_dataset``), in this process;
* ``model``: building the model (``build_cluster_model``), in this process;
* ``run_local``: the whole in-process runner for one iteration per worker, its wall time split
  into the coordinator's run (``elapsed_s`` of the summary: from the first permission to the
  end) and the rest (process start, rendezvous, per-rank set-up, shutdown);
* ``cli``: ``python -m fl_r2sp.cluster`` for one iteration, the command a user runs, split
  the same way;
* ``cli --help`` and ``cli refusal`` (an unknown model name, exit 2): the command's answers
  that import no torch (the goal is under 1 s on an idle machine).

Prints one line per phase, in seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

IMPORTS = {
    "import torch": "import torch",
    "import torch.distributed": "import torch.distributed",
    "import rank entry": "import fl_r2sp.cluster.rank",
}


def _fresh(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def _best(fn: object, repeats: int) -> float:
    return float(min(fn() for _ in range(repeats)))  # type: ignore[operator]


#: The command's quick answers: ``--help``, and a refused flag (exit 2).
QUICK = {
    "cli --help": (["--help"], 0),
    "cli refusal (--model nosuchnet)": (["--model", "nosuchnet"], 2),
}


def _quick(argv: list[str], status: int) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fl_r2sp.cluster", *argv], capture_output=True)
    if proc.returncode != status:
        raise RuntimeError(f"{argv} exited {proc.returncode}, not {status}")
    return time.perf_counter() - t0


def _in_process(model: str, repeats: int) -> dict[str, float]:
    from fl_r2sp.cluster.config import num_classes_of
    from fl_r2sp.cluster.data import make_dataset
    from fl_r2sp.cluster.models import build_cluster_model

    def data() -> float:
        t0 = time.perf_counter()
        make_dataset(model, "synthetic", None, 0, include_test=False, max_train=0)
        return time.perf_counter() - t0

    def build() -> float:
        t0 = time.perf_counter()
        build_cluster_model(model, num_classes_of("synthetic"), 0)
        return time.perf_counter() - t0

    return {"data": _best(data, repeats), "model": _best(build, repeats)}


def _run_local(model: str, workers: int, out: Path) -> dict[str, float]:
    from fl_r2sp.cluster.config import ClusterConfig
    from fl_r2sp.cluster.local import run_local
    from fl_r2sp.cluster.schemes import scheme_params

    cfg = ClusterConfig(workers=workers, servers=1, scheme=scheme_params("asp"), model=model,
                        dataset="synthetic", max_iterations=1, run_dir=str(out),
                        eval_samples=0, progress_s=0.0, plots=False)  # fmt: skip
    run = run_local(cfg)
    elapsed = float(run.summary["elapsed_s"]) if run.summary else float("nan")
    return {"run_local total": run.wall_s, "run_local before+after the run": run.wall_s - elapsed}


def _cli(model: str, workers: int, out: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "fl_r2sp.cluster", "--scheme", "asp", "--workers", str(workers),
            "--servers", "1", "--model", model, "--dataset", "synthetic",
            "--iterations", "1", "--run-dir", str(out), "--eval-samples", "0",
            "--no-plots"]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    summary = json.loads(next(out.rglob("summary.json")).read_text())
    elapsed = float(summary.get("elapsed_s", float("nan")))
    return {"cli total": wall, "cli before+after the run": wall - elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", help="cluster model [mlp]")
    parser.add_argument("--workers", type=int, default=4, help="workers [4]")
    parser.add_argument("--repeats", type=int, default=1, help="best of this many [1]")
    parser.add_argument("--skip-cli", action="store_true", help="leave out the CLI run")
    parser.add_argument("--quick-only", action="store_true",
                        help="only the imports and the command's quick answers")  # fmt: skip
    args = parser.parse_args()
    rows = {name: _best(lambda c=code: _fresh(c), args.repeats) for name, code in IMPORTS.items()}
    rows.update({name: _best(lambda a=argv, s=status: _quick(a, s), args.repeats)
                 for name, (argv, status) in QUICK.items()})  # fmt: skip
    if args.quick_only:
        _print(rows)
        return
    rows.update(_in_process(args.model, args.repeats))
    with tempfile.TemporaryDirectory() as tmp:
        rows.update(_run_local(args.model, args.workers, Path(tmp) / "local"))
        if not args.skip_cli:
            rows.update(_cli(args.model, args.workers, Path(tmp) / "cli"))
    _print(rows)


def _print(rows: dict[str, float]) -> None:
    for name, seconds in rows.items():
        print(f"{name:32s} {seconds:8.2f} s")


if __name__ == "__main__":
    main()

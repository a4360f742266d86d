"""What R²SP's permission order of pushes costs, beside arrival order (not a timed test).

Usage::

    .venv/bin/python benchmarks/bench_push_order.py                 # seeds 0 1, real + twin
    .venv/bin/python benchmarks/bench_push_order.py --seeds 0 --iterations 40

Real runs: the real Fig. 8 setting (``experiments.r2sp_cluster.real.fig8.fig8_config``:
mlp-wide, 4 workers, one PS capped at 20 MB/s), R²SP with ``push_order`` "arrival" and
"permission", alternated per seed so that both meet the same machine load. Twin: the same
setting in virtual time (mlp-wide's bytes, the PS cap, each worker's compute time and its
coefficient of variation as measured in the arrival-order runs, and then larger ones
(``--twin-cv``), 200 iterations).

Prints per run: mean iteration time (permission to push), mean blocking, mean active time,
the staleness distribution and how many pushes waited for an earlier-permitted one.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ORDERS = ("arrival", "permission")


def _figures(rows: list[dict[str, Any]], waits: int | None) -> dict[str, Any]:
    num = [{k: float(r[k]) for k in ("t_start", "t_end", "blocking_s", "staleness")} for r in rows]
    return {
        "iteration_s": statistics.fmean(r["t_end"] - r["t_start"] for r in num),
        "blocking_s": statistics.fmean(r["blocking_s"] for r in num),
        "active_s": statistics.fmean(r["t_end"] - r["t_start"] - r["blocking_s"] for r in num),
        "staleness": dict(sorted(collections.Counter(int(r["staleness"]) for r in num).items())),
        "waits": waits,
    }


def _real(order: str, seed: int, iterations: int, out: Path) -> tuple[dict[str, Any], Any]:
    from experiments.r2sp_cluster.real.fig8 import fig8_config
    from fl_r2sp.cluster.local import run_local
    from fl_r2sp.cluster.schemes import scheme_params
    from fl_r2sp.cluster.telemetry import read_rows

    cfg = dataclasses.replace(
        fig8_config("r2sp", seed),
        max_iterations=iterations,
        scheme=scheme_params("r2sp", push_order=order),
        run_dir=str(out),
    )
    run = run_local(cfg)
    rows = read_rows(run.run_dir / "workers.csv")
    waits = sum(r["event"] == "order_wait" for r in read_rows(run.run_dir / "permissions.csv"))
    return _figures(rows, waits), rows


def _twin(order: str, rows: list[dict[str, Any]], seed: int, cv: float | None) -> dict[str, Any]:
    from experiments.r2sp_cluster.real.fig8 import fig8_config
    from fl_r2sp.cluster.config import num_classes_of
    from fl_r2sp.cluster.models import build_cluster_model
    from fl_r2sp.cluster.policies.ps.r2sp import R2SPParams
    from fl_r2sp.cluster.sim import TwinSpec, simulate

    cfg = fig8_config("r2sp", seed)
    model = build_cluster_model(cfg.model, num_classes_of(cfg.dataset), seed)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    compute = [float(r["compute_s"]) for r in rows]  # jitter: the CV over all workers
    per_worker = collections.defaultdict(list)
    for r in rows:
        per_worker[int(r["worker"])].append(float(r["compute_s"]))
    speeds = tuple(cfg.batch_size / statistics.fmean(per_worker[w]) for w in sorted(per_worker))
    spec = TwinSpec(
        params=R2SPParams(push_order=order), num_workers=cfg.workers, num_servers=1,
        model_bytes=4.0 * params, batch_size=cfg.batch_size, iterations=200, speeds=speeds,
        server_bandwidth=cfg.server_bandwidth_mb_s * 1e6,
        jitter_cv=statistics.pstdev(compute) / statistics.fmean(compute) if cv is None else cv,
        seed=seed,
    )  # fmt: skip
    res = simulate(spec)
    return _figures([r for r in res.rows if r["iteration"] >= 1], None)  # no waits logged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--iterations", type=int, default=40, help="per worker [40: Fig. 8's]")
    ap.add_argument("--twin-cv", type=float, nargs="*", default=[0.3, 0.6],
                    help="more twin runs with these compute jitters (CV) [0.3 0.6]")  # fmt: skip
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in ns.seeds:
            measured: dict[str, Any] = {}
            for order in ORDERS:
                figs, rows = _real(order, seed, ns.iterations, Path(tmp))
                measured[order] = rows
                print(f"real seed {seed} {order:10s} {figs}", flush=True)
            for cv in (None, *ns.twin_cv):  # None: the CV measured in the real run
                for order in ORDERS:
                    figs = _twin(order, measured["arrival"], seed, cv)
                    print(f"twin seed {seed} cv {cv or 'measured'} {order:10s} {figs}", flush=True)


if __name__ == "__main__":
    main()

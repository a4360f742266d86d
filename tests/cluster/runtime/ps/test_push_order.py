"""R²SP's permission order of pushes on the real runtime (scripted compute, one PS, 3 workers).

The twin's hand-computed case (``tests/cluster/sim/ps/test_engine.py``, ``OVERTAKEN``) with
times that keep every two arrivals of different workers 0.3 s or more apart (the runtime's
communication and scheduling add a few milliseconds, under load tens, which must not reorder
them): r = 0, every worker starts at once; worker 0 computes 0.3 s then 3 s, worker 1 0.6 s
then 0.1 s, worker 2 1.2 s then 0.1 s. Permissions (0,0) (1,0) (2,0) at 0, (0,1) at 0.3,
(1,1) at 0.6, (2,1) at 1.2; pushes arrive (0,0) 0.3, (1,0) 0.6, (1,1) 0.7, (2,0) 1.2, (2,1)
1.3, (0,1) 3.3. In arrival order worker 0's push of iteration 1 meets 4 updates (> N − 1 =
2); in permission order (1,1) waits behind (2,0) and then with (2,1) behind (0,1)
(``order_wait``), both are applied after worker 0's, and no staleness exceeds 2. The release
by a lost worker is covered by the twin's and the sequencer's tests and by the CLI kill test
of ``r2sp`` in permission order.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.local import run_local
from fl_r2sp.cluster.schemes import scheme_params

SCRIPT = ((0.3, 3.0), (0.6, 0.1), (1.2, 0.1))


def _run(tmp: Path, order: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cfg = ClusterConfig(
        workers=3, servers=1, model="mlp", dataset="synthetic", batch_size=4,
        scheme=scheme_params("r2sp", worker_gap_factor=0.0, t_seed="start", push_order=order),
        max_iterations=2, timeout_s=20.0, run_timeout_s=60.0, run_dir=str(tmp),
        eval_samples=0, progress_s=0.0, plots=False, scripted_compute=SCRIPT,
    )  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    out = []
    for name in ("workers.csv", "permissions.csv"):
        with open(run.run_dir / name, newline="") as fh:
            out.append(list(csv.DictReader(fh)))
    return out[0], out[1]


def _pushes(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(int(r["worker"]), int(r["iteration"])) for r in rows]


@pytest.mark.parametrize("order", ["arrival", "permission"])
def test_r2sp_pushes_are_applied_in_the_chosen_order(tmp_path: Path, order: str) -> None:
    rows, trace = _run(tmp_path, order)  # workers.csv: one row per push, as applied
    staleness = {(int(r["worker"]), int(r["iteration"])): int(r["staleness"]) for r in rows}
    waits = [(int(r["worker"]), int(r["iteration"]), r["behind"]) for r in trace
             if r["event"] == "order_wait"]  # fmt: skip
    if order == "arrival":
        assert _pushes(rows) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (0, 1)]
        assert staleness[(0, 1)] == 4 and waits == []
    else:
        assert _pushes(rows) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
        assert staleness == {(0, 0): 0, (1, 0): 1, (2, 0): 2, (0, 1): 2, (1, 1): 2, (2, 1): 2}
        assert waits == [(1, 1, "(2, 0)"), (2, 1, "(0, 1)")]

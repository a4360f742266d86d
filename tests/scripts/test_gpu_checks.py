"""scripts/gpu_checks.sh, dry run on the CPU: every stage runs and the parsers read its output.

The script is what a short GPU loan runs, rarely; this dry run (``DEVICE=cpu SCALE=smoke``,
synthetic CIFAR-sized data for the benchmarks, 3 cluster iterations, the smoke scale's
federated runs) keeps it from rotting between loans. Several minutes on a loaded 2-core
machine: marked ``slow``, which the README's test command (and so ``.ci/run``) still runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from experiments.common.cluster_cuda import BSP_TOLERANCE
from experiments.flr2sp.executor_figures import parse_logs, stages
from tests.paths import REPO

pytestmark = pytest.mark.slow

#: Every stage of the script, in its order.
STAGES = (
    "env",
    "cluster-bsp",
    "cluster-bsp-cpu",
    "cluster-r2sp",
    "cluster-selective",
    "cluster-dssync",
    "cluster-osp",
    "cluster-table",
    "cuda-tests",
    "kernels-cnn",
    "kernels-resnet20",
    "kernels-tolerance",
    "kernels-compile",
    "cells-nofilter",
    "cells-filter",
    "cells-asp-fedbuff",
    "cells-resnet20-lstm",
)
#: Run records the cells leave in the run cache: 3 + 6 + 6 + 2 (smoke: every cell is mlp).
CELL_RUNS = 17


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gpu-out")
    work = tmp_path_factory.mktemp("gpu-work")
    env = dict(
        os.environ,
        OUT=str(out),
        DEVICE="cpu",
        SCALE="smoke",
        BENCH_DATA="synthetic",
        BUDGET="3000",
        STRETCH="6",
        CLUSTER_ITERS="3",
        JOBS="2",
        PY=sys.executable,
        TMPDIR=str(work),
        FL_R2SP_CACHE=str(work / "cache"),
        PYTHONPATH=str(REPO),
    )
    done = subprocess.run(
        ["bash", "scripts/gpu_checks.sh"], cwd=REPO, env=env, timeout=3300, check=False
    )
    assert done.returncode == 0
    return out


def test_every_stage_ran_and_exited_0(dry_run: Path) -> None:
    checks = (dry_run / "checks.txt").read_text()
    ran = [(s["name"], s["exit"]) for s in stages(checks) if s["name"] != "log"]
    assert ran == [(name, 0) for name in STAGES], checks[-3000:]
    assert checks.rstrip().splitlines()[-1].startswith("total ")


def test_the_benchmark_parser_reads_every_kernel_stage(dry_run: Path) -> None:
    parsed = parse_logs((dry_run / "checks.txt").read_text(), {})
    benches = {b["stage"]: b for b in parsed["benches"]}
    assert sorted(benches) == sorted(s for s in STAGES if s.startswith("kernels-"))
    # Smoke sizes override the paper's: 4 clients x tau 2 in every kernel stage.
    assert {(b["clients"], b["tau"]) for b in benches.values()} == {(4, 2)}
    assert benches["kernels-resnet20"]["model"] == "resnet20"
    labels = [r["label"] for r in benches["kernels-tolerance"]["rows"]]
    assert "serial" in labels and any(label.startswith("batched[bmm") for label in labels)


def test_the_cluster_table_has_every_run_and_bsp_matches(dry_run: Path) -> None:
    rows = {r["check"]: r for r in json.loads((dry_run / "cluster_cuda.json").read_text())["rows"]}
    assert sorted(rows) == sorted(s[len("cluster-") :] for s in STAGES[1:7])
    for row in rows.values():
        assert (row["exit"], row["status"], row["devices"]) == (0, "ok", "cpu")
        assert row["iterations_per_s"] > 0
    assert rows["bsp"]["bsp_max_abs_diff"] <= BSP_TOLERANCE


def test_results_hold_the_cells_and_the_cluster_runs(dry_run: Path) -> None:
    assert len(list(dry_run.iterdir())) <= 8  # what comes back from a device call
    with tarfile.open(dry_run / "results.tgz") as tar:
        names = tar.getnames()
    assert len([n for n in names if n.startswith("./_runs/") and n.endswith(".json")]) >= CELL_RUNS
    assert len([n for n in names if n.endswith("/summary.json") and "/cluster/" in n]) == 6
    assert not [n for n in names if n.endswith("final_params.pt")]

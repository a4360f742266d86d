"""The cluster-on-CUDA table of scripts/gpu_checks.sh, read from a hand-made output folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from experiments.common.cluster_cuda import (
    BSP_TOLERANCE,
    cluster_cuda_lines,
    cluster_rows,
    cluster_table,
    main,
)
from experiments.flr2sp.executor_figures import stages

CHECKS = "\n".join(
    [
        "=== env (limit 40s, 480s of budget left) ===",
        "GPU 0: NVIDIA H999 (UUID: GPU-x)",
        "=== env: exit 0 after 9s ===",
        "=== cluster-bsp (limit 45s, 471s of budget left) ===",
        "=== cluster-bsp: exit 0 after 30s ===",
        "=== cluster-bsp-cpu (limit 45s, 450s of budget left) ===",
        "=== cluster-bsp-cpu: exit 0 after 52s ===",
        "=== cluster-selective (limit 45s, 428s of budget left) ===",
        "=== cluster-selective: exit 124 after 97s ===",
        "=== cluster-dssync (limit 45s, 383s of budget left) ===",
        "=== cluster-dssync: exit 0 after 120s ===",
        "=== cluster-osp: skipped, 5s of budget left ===",
        "=== cluster-table (limit 20s, 360s of budget left) ===",
    ]
)


def write_run(root: Path, check: str, summary: dict, config: dict, flat: list[float]) -> None:
    run = root / check / f"{check}-mlp-wide-synthetic-w4-seed0-20261127-060000"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "config.json").write_text(json.dumps(config))
    torch.save({"flat": torch.tensor(flat), "model": "mlp-wide"}, run / "final_params.pt")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    ps = dict(status="ok", scheme="bsp", workers=4, elapsed_s=10.0, iterations_per_s=3.0)
    write_run(tmp_path, "bsp", ps, dict(devices=["cuda"]), [0.5, -0.25, 1.0])
    cpu = dict(ps, iterations_per_s=1.5)
    write_run(tmp_path, "bsp-cpu", cpu, dict(devices=["cpu"]), [0.5, -0.25 + 4e-5, 1.0])
    # The DS-Sync family counts iterations over all workers and nests its base config.
    ds = dict(status="ok", scheme="dssync", workers=4, elapsed_s=5.0, iterations=120)
    write_run(tmp_path, "dssync", ds, dict(base=dict(devices=["cuda"])), [0.0])
    return tmp_path


def test_rows_read_exits_rates_and_bsp_difference(runs: Path) -> None:
    rows = {r["check"]: r for r in cluster_rows(CHECKS, runs)}
    assert list(rows) == ["bsp", "bsp-cpu", "selective", "dssync", "osp"]  # not the table stage
    bsp = rows["bsp"]
    assert (bsp["exit"], bsp["status"], bsp["devices"], bsp["iterations_per_s"]) == (
        0,
        "ok",
        "cuda",
        3.0,
    )
    assert bsp["bsp_max_abs_diff"] == pytest.approx(4e-5, rel=1e-3)
    assert bsp["within_tolerance"] is True
    assert rows["dssync"]["iterations_per_s"] == pytest.approx(120 / 4 / 5.0)
    assert rows["dssync"]["devices"] == "cuda"
    # A killed run and a skipped stage: the exit code (or none) and no summary.
    assert (rows["selective"]["exit"], rows["selective"]["status"]) == (124, None)
    assert (rows["osp"]["exit"], rows["osp"]["iterations_per_s"]) == (None, None)


def test_a_difference_over_the_tolerance_fails(runs: Path) -> None:
    far = dict(status="ok", scheme="bsp", workers=4, elapsed_s=1.0, iterations_per_s=1.0)
    (runs / "bsp-cpu").rename(runs / "old")
    write_run(runs, "bsp-cpu", far, dict(devices=["cpu"]), [0.5, -0.25 + 10 * BSP_TOLERANCE, 1])
    (bsp,) = [r for r in cluster_rows(CHECKS, runs) if r["check"] == "bsp"]
    assert bsp["within_tolerance"] is False
    assert "(FAIL)" in "\n".join(cluster_table([bsp]))


def test_table_and_report_section(runs: Path, tmp_path: Path) -> None:
    checks = tmp_path / "checks.txt"
    checks.write_text(CHECKS)
    dest = tmp_path / "report" / "cluster_cuda.json"
    dest.parent.mkdir()
    assert cluster_cuda_lines(dest.parent)[2].startswith("Not run on a GPU yet")
    main(["--checks", str(checks), "--runs", str(runs), "--dest", str(dest)])
    lines = cluster_cuda_lines(dest.parent)
    assert lines[2] == "Device: NVIDIA H999."
    table = lines[4:-1]
    assert table[0].startswith("| check | devices | exit | status | it/s per worker |")
    # markdown_cells.cell: numbers to 4 significant digits, an empty cell as a dash.
    assert table[2] == "| bsp | cuda | 0 | ok | 3 | 4e-05 (pass) |"
    assert table[4] == "| selective | n/a | 124 | no summary | n/a | – |"
    assert table[6] == "| osp | n/a | killed or skipped | no summary | n/a | – |"


def test_skipped_stages_are_parsed_as_such() -> None:
    (osp,) = [s for s in stages(CHECKS) if s["name"] == "cluster-osp"]
    assert osp["skipped"] is True and osp["exit"] is None
    assert not any(s["name"] == "log" for s in stages(CHECKS))  # no stray default stage

"""Cluster mode on CUDA: the cluster stages of ``scripts/gpu_checks.sh`` as one small table.

Each cluster stage ``cluster-<check>`` of the script starts one short run of
``python -m fl_r2sp.cluster`` (synthetic data, ``mlp-wide``, 4 workers) with
``--run-dir <runs>/<check>``; its exit code is on the stage's closing line in
``<OUT>/checks.txt``. ``cluster-bsp-cpu`` is the BSP run again with ``--devices cpu``. BSP
applies the same averaged update whatever the timing, so the CUDA run's final parameters
differ from the CPU run's only by how the two devices round the same float32 arithmetic:
the check passes when the largest absolute difference is at most :data:`BSP_TOLERANCE`.

This module reads the stages and run folders into rows (check, devices, exit, status,
iterations per second per worker, BSP's difference) and writes them to a JSON file, on the
GPU machine itself, so that the parameters (megabytes per run) need not come back::

    python -m experiments.common.cluster_cuda --checks <OUT>/checks.txt --runs <runs> \\
        --dest <OUT>/cluster_cuda.json

:func:`cluster_cuda_lines` turns the committed JSON (``records/report/cluster_cuda.json``)
into the report's Markdown section.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from experiments.common.markdown_cells import table_lines
from experiments.flr2sp.executor_figures import environment, stages

#: Pass rule of BSP on CUDA against BSP on the CPU: the largest absolute difference of the
#: final parameters (mlp-wide, 30 iterations, lr 0.1). Stated before any GPU run: float32
#: matrix products rounded differently, compounded over 30 steps, stay orders of magnitude
#: below it; a wrong update (one push lost or applied twice) is orders of magnitude above.
BSP_TOLERANCE = 1e-4
#: Stage-name prefix of the cluster runs.
PREFIX = "cluster-"
#: The CPU run BSP on CUDA is compared with.
CPU_CHECK = "bsp-cpu"


def run_folder(root: Path, check: str) -> Path | None:
    """The run folder ``check`` wrote under ``root/check`` (the newest holding a summary)."""
    found = sorted((root / check).glob("*/summary.json"))
    return found[-1].parent if found else None


def iterations_per_s(summary: dict[str, Any]) -> float | None:
    """Iterations per second per worker: the parameter-server summary's own figure, else the
    total iterations of the reduce and DS-Sync families over workers and elapsed seconds."""
    if summary.get("iterations_per_s") is not None:
        return float(summary["iterations_per_s"])
    total = summary.get("total_iterations", summary.get("iterations"))
    elapsed, workers = summary.get("elapsed_s"), summary.get("workers")
    if total is None or not elapsed or not workers:
        return None
    return float(total) / workers / elapsed


def max_abs_diff(a: Path, b: Path) -> float:
    """Largest absolute difference of two runs' final parameters (``final_params.pt``)."""
    import torch

    flat_a = torch.load(a / "final_params.pt", map_location="cpu")["flat"]
    flat_b = torch.load(b / "final_params.pt", map_location="cpu")["flat"]
    return float((flat_a.double() - flat_b.double()).abs().max())


def cluster_rows(checks: str, root: Path) -> list[dict[str, Any]]:
    """One row per cluster stage of the log ``checks``, its run read from ``root/<check>``."""
    parts = stages(checks)
    runs = {s["name"][len(PREFIX) :]: s for s in parts if s["name"].startswith(PREFIX)}
    runs.pop("table", None)  # the stage that runs this parser
    folders = {check: run_folder(root, check) for check in runs}
    rows = []
    for check, stage in runs.items():
        folder = folders[check]
        summary = json.loads((folder / "summary.json").read_text()) if folder else {}
        config = json.loads((folder / "config.json").read_text()) if folder else {}
        config = config.get("base", config)  # the reduce and DS-Sync configs nest the base
        row: dict[str, Any] = dict(
            check=check,
            scheme=summary.get("scheme"),
            devices=",".join(config.get("devices", [])) or None,
            exit=stage["exit"],
            status=summary.get("status"),
            iterations_per_s=iterations_per_s(summary),
        )
        cpu = folders.get(CPU_CHECK)
        if check == "bsp" and folder and cpu:
            diff = max_abs_diff(folder, cpu)
            row.update(bsp_max_abs_diff=diff, within_tolerance=diff <= BSP_TOLERANCE)
        rows.append(row)
    return rows


def cluster_table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table: check, devices, exit, status, it/s, BSP's difference."""

    def cells(r: dict[str, Any]) -> dict[str, str]:
        diff = r.get("bsp_max_abs_diff")
        verdict = "" if diff is None else (" (pass)" if r["within_tolerance"] else " (FAIL)")
        rate = r.get("iterations_per_s")
        return {
            "check": r["check"],
            "devices": r.get("devices") or "n/a",
            "exit": "killed or skipped" if r.get("exit") is None else str(r["exit"]),
            "status": r.get("status") or "no summary",
            "it/s per worker": "n/a" if rate is None else f"{rate:.3g}",
            f"BSP max abs diff vs CPU (tolerance {BSP_TOLERANCE:g})": (
                "" if diff is None else f"{diff:.2g}{verdict}"
            ),
        }

    shown = [cells(r) for r in rows]
    return table_lines(shown, list(shown[0]) if shown else [])


def cluster_cuda_lines(report_dir: Path) -> list[str]:
    """The report's "cluster mode on CUDA" section from ``report_dir/cluster_cuda.json``."""
    title = "## Cluster mode on CUDA"
    path = report_dir / "cluster_cuda.json"
    if not path.exists():
        return [title, "", "Not run on a GPU yet: `scripts/gpu_checks.sh` (README).", ""]
    data = json.loads(path.read_text())
    return [title, "", f"Device: {data.get('gpu') or 'n/a'}.", "", *cluster_table(data["rows"]), ""]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checks", required=True, help="the script's log, checks.txt")
    p.add_argument("--runs", required=True, help="folder of the cluster stages' run folders")
    p.add_argument("--dest", required=True, help="JSON file to write")
    ns = p.parse_args(argv)
    checks = Path(ns.checks).read_text()
    env = next((s for s in stages(checks) if s["name"] == "env"), None)
    gpu = environment(env["lines"])["gpu"] if env else None
    rows = cluster_rows(checks, Path(ns.runs))
    Path(ns.dest).write_text(json.dumps(dict(gpu=gpu, rows=rows), indent=2) + "\n")
    print("\n".join(cluster_table(rows)))


if __name__ == "__main__":
    main()

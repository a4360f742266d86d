"""The OSP part of REPORT.md's cluster section, computed from the published files.

Source: ``experiments/report/osp_real/{summary.csv,claims.csv,summary.json}`` written by
``python -m experiments.osp_real --publish experiments/report`` (small real CPU runs on the PS
runtime). Every number comes from those files (the paper's are columns of the summary); no
string literal here holds a figure.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

COLUMNS = (
    "label", "iteration_s", "throughput", "throughput_vs_best_baseline", "bst_s", "bst_vs_bsp",
    "sync_share", "compute_s", "w0_compute_s", "ics_fraction", "iterations_to_target",
    "time_to_target_s", "reached", "final_mean_loss", "test_accuracy",
)  # fmt: skip


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _cell(value: str) -> str:
    if value in ("", "None", "nan"):
        return "–"
    try:
        x = float(value)
    except ValueError:
        return value
    return value if x.is_integer() and "." not in value else f"{x:.4g}"


def _num(x: Any, digits: int = 2) -> str:
    try:
        return f"{float(x):.{digits}f}"
    except (TypeError, ValueError):
        return "n/a"


def _setup(summary: dict[str, Any]) -> str:
    c = summary["config"]
    return (
        f"{c['model']} on {c['dataset']}, {c['workers']} workers, {c['servers']} PS whose "
        f"ingress and egress are each capped at {c['server_bandwidth_mb_s']:g} MB/s, batch "
        f"{c['batch_size']}, lr {c['lr']:g}, at most {c['max_iterations']} iterations per "
        f"worker, loss target {c['loss_threshold']:g}, OSP schedule epochs of "
        f"{summary['epoch_iterations']} iterations; seeds "
        f"{', '.join(str(s) for s in summary['seeds'])}"
    )


def _reading(rows: list[dict[str, str]], best: str) -> str:
    by = {r["label"]: r for r in rows}
    osp = next((r for r in rows if r.get("paper_throughput_gain")), None)
    c = by.get("osp-c-fixed", {})
    if osp is None:
        return ""
    return (
        f"Best OSP run ({osp['label']}): throughput {_num(osp['throughput_vs_best_baseline'])} "
        f"times the best baseline's ({best}); paper up to {_num(osp['paper_throughput_gain'])} "
        f"({osp.get('verdict_throughput')}). Its batch synchronisation time is "
        f"{_num(osp['bst_vs_bsp'])} of BSP's, with on average "
        f"{_num(float(osp['ics_fraction'] or 0) * 100, 0)}% of the model in ICS. OSP-C: the co-located "
        f"worker's compute time is {_num(float(c.get('w0_compute_overhead') or 0) * 100, 1)}% above "
        f"OSP-S's (paper {_num(float(c.get('paper_overhead_low') or 0) * 100, 0)}–"
        f"{_num(float(c.get('paper_overhead_high') or 0) * 100, 0)}%); on this machine every "
        "rank shares the same two cores, so that difference mixes the co-located PS work with "
        "the load of the other processes."
    )


def osp_lines(root: Path) -> list[str]:
    """The OSP subsection; ``root`` holds ``osp_real/`` (``experiments/report``)."""
    d = root / "osp_real"
    rows = _read(d / "summary.csv")
    lines = ["### OSP on the parameter-server runtime (small real runs on CPU)", ""]
    if not rows or not (d / "summary.json").exists():
        return [*lines, "Not run (no `osp_real/summary.csv`).", ""]
    summary = json.loads((d / "summary.json").read_text())
    keys = [k for k in COLUMNS if k in rows[0]]
    lines += [f"Setup: {_setup(summary)}. `python -m experiments.osp_real`.", ""]
    lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    lines += [""] + [f"- {c['claim']}: **{c['verdict']}**" for c in _read(d / "claims.csv")]
    reading = _reading(rows, str(summary.get("best_baseline")))
    lines += ["", reading, ""] if reading else [""]
    if (d / "osp_real.png").exists():
        lines += ["![osp real](report/osp_real/osp_real.png)", ""]
    return lines

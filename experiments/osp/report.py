"""The OSP part of REPORT.md's cluster section, computed from the published files.

Source: ``records/report/osp_real/{summary.csv,claims.csv,summary.json}`` written by
``python -m experiments.osp.real --publish experiments/report`` (small real CPU runs on the PS
runtime). Every number comes from those files (the paper's are columns of the summary); the
throughput verdict is judged here by the report's rules (:func:`throughput_verdict`), not read
from the file. No string literal here holds a figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.common import verdicts
from experiments.common.markdown_cells import num as _num
from experiments.common.markdown_cells import read_csv as _read
from experiments.common.markdown_cells import table_lines

COLUMNS = (
    "label", "iteration_s", "throughput", "throughput_vs_best_baseline", "matched_seeds",
    "matched_gain", "bst_s", "bst_vs_bsp",
    "sync_share", "compute_s", "w0_compute_s", "ics_fraction", "iterations_to_target",
    "time_to_target_s", "reached", "final_mean_loss", "test_accuracy",
)  # fmt: skip


def _setup(summary: dict[str, Any]) -> str:
    c = summary["config"]
    return (
        f"{c['model']} on {c['dataset']}, {c['workers']} workers, {c['servers']} PS whose "
        f"ingress and egress are each capped at {c['server_bandwidth_mb_s']:g} MB/s, batch "
        f"{c['batch_size']}, lr {c['lr']:g}, at most {c['max_iterations']} iterations per "
        f"worker, loss target {c['loss_threshold']:g}, OSP schedule epochs of "
        f"{summary['epoch_iterations']} iterations; throughput in samples/s, times in s; seeds "
        f"{', '.join(str(s) for s in summary['seeds'])}"
    )


def _pct(x: Any, digits: int = 0) -> str:
    try:
        return _num(float(x) * 100, digits) + "%"
    except (TypeError, ValueError):
        return "n/a"


def throughput_verdict(row: dict[str, str]) -> str:
    """The best OSP run's throughput gain (load-matched seeds, else all) against the paper's,
    read as the time it saves per sample (a reduction, :mod:`experiments.common.verdicts`)."""
    matched = row.get("matched_gain")
    gain = matched or row.get("throughput_vs_best_baseline")
    seeds = int(row["matched_seeds"]) if matched and row.get("matched_seeds") else None
    try:
        ours, paper = float(gain or ""), float(row.get("paper_throughput_gain") or "")
    except ValueError:
        return "n/a"
    words = verdicts.reduction_label(
        verdicts.reduction_of_speedup(ours), verdicts.reduction_of_speedup(paper), seeds=seeds
    )
    return verdicts.plain(words)


def _reading(rows: list[dict[str, str]], best: str) -> str:
    by = {r["label"]: r for r in rows}
    osp = next((r for r in rows if r.get("paper_throughput_gain")), None)
    if osp is None:
        return ""
    c = by.get("osp-c-fixed", {})
    computes = [float(r["compute_s"]) for r in rows if r.get("compute_s")]
    sched = by.get("osp-s", {}).get("ics_fraction")
    overhead = (
        f"its co-located worker computed {_pct(c.get('w0_compute_overhead'), 1)} slower than "
        "OSP-S's on the load-matched seeds"
        if c.get("w0_compute_overhead")
        else "no seed ran OSP-C and OSP-S under the same load, so its compute overhead is not "
        "measured here"
    )
    return (
        f"Best OSP run ({osp['label']}): on {osp.get('matched_seeds')} load-matched seed(s) "
        f"(every run's mean compute time within the load band of BSP's, `LOAD_BAND` of "
        f"`experiments/osp/real.py`) its throughput is "
        f"{_num(osp.get('matched_gain'))} times the better baseline's of the same seed; paper up "
        f"to {_num(osp['paper_throughput_gain'])} ({throughput_verdict(osp)}). Over all "
        f"seeds it is {_num(osp['throughput_vs_best_baseline'])} times the best baseline's "
        f"({best}), but the runs met different loads of this shared machine (mean compute per "
        f"iteration from {_num(min(computes, default=None))} to "
        f"{_num(max(computes, default=None))} s across labels). Its batch synchronisation time "
        f"is {_num(osp['bst_vs_bsp'])} of BSP's with {_pct(osp['ics_fraction'])} of the model in "
        f"ICS on average. The per-epoch schedule (osp-s) moved only {_pct(sched)} of the model "
        "to ICS: the loss fell little within the iteration cap, and the schedule "
        f"scales U_max by the loss decrease. OSP-C: {overhead} (paper "
        f"{_pct(c.get('paper_overhead_low'))} to {_pct(c.get('paper_overhead_high'))})."
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
    lines += [f"Setup: {_setup(summary)}. `python -m experiments.osp.real`.", ""]
    lines += table_lines(rows, keys)
    lines += [""] + [f"- {c['claim']}: **{c['verdict']}**" for c in _read(d / "claims.csv")]
    reading = _reading(rows, str(summary.get("best_baseline")))
    lines += ["", reading, ""] if reading else [""]
    if (d / "osp_real.png").exists():
        lines += ["![osp real](records/report/osp_real/osp_real.png)", ""]
    return lines

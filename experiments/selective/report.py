"""The selective-reduce sections of REPORT.md, computed from the published files.

Reads ``records/report/selective/<item>/{runs.csv,claims.csv,*.png}`` (``python -m
experiments.selective.run --publish records/report/selective``): every claim with its
verdict as :mod:`experiments.selective.trials` states the rules, and min / median / max over the
trials; then the real CPU runs' record ``records/report/selective_real/results.json``
(``python -m experiments.selective.real``, rendered by
:mod:`experiments.selective.real_report`). No string literal here holds a figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from experiments.common.markdown_cells import cell, md_table, read_csv, tally
from experiments.selective.cli import TITLES
from experiments.selective.real_report import real_lines
from experiments.selective.trials import __doc__ as SELECTIVE_SETUP

#: Columns of a selective item's runs.csv shown as min / median / max (the wait item: its own).
SELECTIVE_METRICS = ("sync_time_s", "scale", "total_iterations", "total_syncs")


#: Items whose table shows other metrics than SELECTIVE_METRICS.
ITEM_METRICS = {"fig7": ("wasted_wait_pct", "wasted_slot_pct", "waited_s", "wait_decisions")}


SPREAD = ("_min", "_median", "_max")


def spread_table(rows: Sequence[Mapping[str, str]], metrics: Sequence[str]) -> list[str]:
    """A runs.csv as Markdown: its key columns, then each metric as 'min / median / max'."""
    if not rows:
        return []
    keys = [k for k in rows[0] if not k.endswith(SPREAD)]
    shown = [m for m in metrics if m + SPREAD[1] in rows[0]]
    out = ["| " + " | ".join([*keys, *shown]) + " |", "|" + "---|" * (len(keys) + len(shown))]
    for r in rows:
        cells = [cell(r.get(k, "")) for k in keys]
        cells += [" / ".join(cell(r.get(m + end, "")) for end in SPREAD) for m in shown]
        out.append("| " + " | ".join(cells) + " |")
    return out


def item_lines(root: Path, item: str, title: str) -> list[str]:
    d = root / "selective" / item
    runs, claims = read_csv(d / "runs.csv"), read_csv(d / "claims.csv")
    lines = [f"### {title}", ""]
    if not runs:
        return [*lines, f"Not published (no `selective/{item}/runs.csv`).", ""]
    trials = sorted({r.get("trials", "") for r in runs})
    lines += [f"![selective {item}](records/report/selective/{item}/{png.name})"
              for png in sorted(d.glob("*.png"))] + [""]  # fmt: skip
    lines += [*md_table(claims), "", f"Verdicts: {tally(claims)}.", ""]
    metrics = ITEM_METRICS.get(item, SELECTIVE_METRICS)
    lines += [f"Trials per point: {', '.join(trials)}; each cell min / median / max over them.", ""]
    return [*lines, *spread_table(runs, metrics), ""]


def selective_lines(root: Path) -> list[str]:
    """The selective-reduce sections (simulations, then the real runs); ``root`` holds
    ``selective/`` and ``selective_real/`` (``records/report``)."""
    setup = SELECTIVE_SETUP or ""
    rules = setup[setup.find("Verdict rules") :].strip() if "Verdict rules" in setup else ""
    claims = [c for item in TITLES for c in read_csv(root / "selective" / item /
                                                               "claims.csv")]  # fmt: skip
    lines = [
        "## Cluster mode: selective reduce against partial and all reduce (simulations)",
        "",
        "The selective-reduce paper is simulation-only, and so is this section: the "
        "all-reduce-family controllers run in virtual time (`fl_r2sp.cluster.sim.reduce.engine`, "
        "`python -m experiments.selective.run`); nothing is trained. The setup and our choices are "
        "in `records/report/selective/REPORT.md` and `experiments/selective/trials.py`; "
        "real runs of the same controllers on this machine are in the next section.",
        "",
        rules,
        "",
        f"All selective-reduce claims: {tally(claims)}.",
        "",
    ]
    for item, title in TITLES.items():
        lines += item_lines(root, item, title)
    return [*lines, *real_lines(root)]

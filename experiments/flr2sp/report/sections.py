"""The FL-R²SP part of REPORT.md: one section per item, in the paper's order.

Each item's section is its provenance, its table, the figures kept beside the report and its
reading; the tables and readings live with their kind of item (:mod:`.timing`, :mod:`.training`,
:mod:`.paper_size`), the cell formats in :mod:`.formats`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from experiments.common import provenance
from experiments.common.conf import MAIN_JOB, TRAINING
from experiments.flr2sp import paper
from experiments.flr2sp.filter_rules import CONFIRMING, record_item
from experiments.flr2sp.report.fig15 import note_fig15, sec_fig15
from experiments.flr2sp.report.filter_help import (
    gains_in_points,
    note_filter_rules,
    note_main_job,
    note_mid,
    sec_filter_rules,
)
from experiments.flr2sp.report.formats import Summary
from experiments.flr2sp.report.outliers import note_outliers, sec_outliers
from experiments.flr2sp.report.outliers_scoring import note_outliers_scoring, sec_outliers_scoring
from experiments.flr2sp.report.paper_size import note_paper_scale, sec_paper_scale
from experiments.flr2sp.report.table4 import note_table4, sec_table4
from experiments.flr2sp.report.timing import (
    note_c_sweep,
    note_fig16,
    note_fig17,
    note_fig18,
    note_table2,
    note_table5,
    sec_c_sweep,
    sec_fig16,
    sec_fig17,
    sec_fig18,
    sec_table2,
    sec_table5,
)

#: An item's table: its summary -> Markdown lines.
Table = Callable[[Summary], list[str]]
#: An item's reading: (its summary, every item's summary) -> one paragraph.
Note = Callable[[Summary, dict[str, Summary]], str]

#: Figures copied next to the report (item -> file names in the item folder).
KEEP = {
    "table2": ["table2.png"],
    "table5": ["table5.png"],
    "fig15": ["fig15.png", "accuracy-cnn.png", "accuracy-lstm.png"],
    "fig16": [
        "gantt-bsp-fair.png",
        "gantt-fl-r2sp-fair.png",
        "gantt-bsp-fcfs.png",
        "gantt-fl-r2sp-fcfs.png",
    ],
    "fig17": ["egress-resnet20-fair.png", "egress-cnn-fair.png", "egress-resnet20-fcfs.png"],
    "fig18": ["fig18.png"],
    "c_sweep": ["c_sweep.png"],
    "outliers_scoring": ["outliers_scoring.png"],
    "paper_scale": ["accuracy-cnn.png"],
}

#: Item -> (section title, table, reading), in the report's order.
SECTIONS: dict[str, tuple[str, Table, Note]] = {
    "table2": (
        "Table II — communication slowdown under contention",
        sec_table2,
        note_table2,
    ),
    "table4": ("Table IV — per-round and convergence time", sec_table4, note_table4),
    "table5": (
        "Table V — push/pull time and communication speedup",
        sec_table5,
        note_table5,
    ),
    "fig15": ("Fig. 15 — final accuracy per scheme (+ FedBuff)", sec_fig15, note_fig15),
    "fig16": ("Fig. 16 — client phases (Gantt)", sec_fig16, note_fig16),
    "fig17": ("Fig. 17 — server egress peaks", sec_fig17, note_fig17),
    "fig18": ("Fig. 18 — round time vs group size", sec_fig18, note_fig18),
    "c_sweep": ("Round time and accuracy vs C", sec_c_sweep, note_c_sweep),
    "outliers": (
        "Outlier filter precision/recall and false positives",
        sec_outliers,
        note_outliers,
    ),
    "outliers_scoring": (
        "Outlier scoring at the paper's per-client setting: which cosine reference",
        sec_outliers_scoring,
        note_outliers_scoring,
    ),
    "filter_rules": ("Making the filter help", sec_filter_rules, note_filter_rules),
    record_item(MAIN_JOB): (
        "Making the filter help: the main job (`flwr run .`, digits)",
        sec_filter_rules,
        note_main_job,
    ),
    # The mid-scale confirmation (64 clients, tau 50): its own records, "not run" until
    # they exist (6.5-10 min per CIFAR run on a quiet 2-core machine with --executor processes,
    # 2-3 min for the paper's rule, which stops early).
    record_item(CONFIRMING): (
        f"Making the filter help: mid scale ({TRAINING['mid']['num_partitions']} clients, tau "
        f"{TRAINING['mid']['local_iterations']})",
        sec_filter_rules,
        note_mid,
    ),
    "paper_scale": (
        "Paper-size training: Table IV's convergence and Fig. 15 ("
        f"{TRAINING['paper']['num_partitions']} clients, tau "
        f"{TRAINING['paper']['local_iterations']})",
        sec_paper_scale,
        note_paper_scale,
    ),
}
#: The items, in the report's order.
ITEMS = tuple(SECTIONS)
#: Record folders written by another item's script under another setting: folder -> the
#: script's arguments.
COMMANDS = {
    record_item(MAIN_JOB): f"filter_rules --scale {MAIN_JOB}",
    record_item(CONFIRMING): f"filter_rules --scale {CONFIRMING}",
}


def command_of(item: str) -> str:
    """The command that computes ``item``'s record (a script, plus its setting if not its own)."""
    return f"python -m experiments.flr2sp.{COMMANDS.get(item, item)}"


def recorded(out: Path, item: str) -> bool:
    """Whether ``item``'s record exists and every run of it was made by committed code."""
    prov = load_summary(out, item, "provenance.json")
    has_runs = load_summary(out, item) is not None and prov is not None
    return has_runs and not provenance.uncommitted(prov or {})


def load_summary(out: Path, item: str, name: str = "summary.json") -> Summary | None:
    """``<out>/<item>/<name>`` parsed, or None when the item has not run."""
    path = out / item / name
    if not path.exists():
        return None
    d: Summary = json.loads(path.read_text())
    runs = out / item / "runs.csv"
    if "verdicts" in d and runs.exists():  # the filter-rules items
        d = gains_in_points(d, runs)
    return d


def item_lines(
    out: Path, keep: Path, item: str, summaries: dict[str, Summary], report_dir: Path
) -> list[str]:
    """One item's section: provenance, table, kept figures (copied to ``keep``) and reading
    (``report_dir``: the folder of the published files, unused by the FL items)."""
    title, section, note = SECTIONS[item]
    lines = [f"## {title}", ""]
    d = summaries.get(item)
    command = f"`{command_of(item)}`"
    if d is None:
        return lines + [f"Not run (no committed record `{item}/summary.json`): {command}.", ""]
    prov = load_summary(out, item, "provenance.json")
    if prov is None:
        return lines + [f"Not run (its record has no `provenance.json`): {command}.", ""]
    dirty = provenance.uncommitted(prov)
    if dirty:
        return lines + [
            f"Not run from committed code ({len(dirty)} of its {len(prov.get('runs', []))} runs "
            f"were made by uncommitted edits or outside a git checkout): {command}.",
            "",
        ]
    lines += [
        f"Scale `{d['scale']}`, seeds {d['seeds']}. Paper: {paper.CLAIMS.get(item, '')}",
        "",
        provenance.summarise(prov),
        "",
    ]
    lines += section(d) + [""]
    lines += missing_lines(item, d)
    for name in [f"{item}.csv"] + KEEP.get(item, []):
        src = out / item / ("summary.csv" if name.endswith(".csv") else name)
        if src.exists():
            shutil.copyfile(src, keep / (name if name.endswith(".csv") else f"{item}-{name}"))
            if name.endswith(".png"):
                lines += [f"![{item} {name}](records/report/{item}-{name})", ""]
    # A reading may quote other items: only those whose records were made by committed code.
    quoted = {i: s for i, s in summaries.items() if recorded(out, i)}
    return [*lines, note(d, quoted), ""]


def missing_lines(item: str, d: Summary) -> list[str]:
    """The runs an item left out because they were not cached (``--skip-training``), with the
    command that computes them (items other than ``paper_scale``, which lists its own)."""
    miss = d.get("missing") or []
    if not miss or item == "paper_scale":
        return []
    # One entry per scheme or case with its seeds: a sweep cut short leaves dozens of runs.
    runs: dict[str, list[str]] = {}
    for m in miss:
        runs.setdefault(str(m.get("scheme") or m.get("case")), []).append(str(m["seed"]))
    what = "; ".join(
        f"{name} seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}"
        for name, seeds in runs.items()
    )
    seeds = ",".join(dict.fromkeys(str(m["seed"]) for m in miss))
    scale = "" if item in COMMANDS else f" --scale {d['scale']}"  # COMMANDS name their setting
    return [
        f"Not cached, left out ({len(miss)} runs: {what}); computed by "
        f"`OMP_NUM_THREADS=1 {command_of(item)}{scale} --seeds {seeds}`.",
        "",
    ]


#: The last report whose FL-R²SP numbers came from a run cache that was never committed (some
#: runs made by uncommitted edits): pointed to, not repeated, where no committed record exists.
UNRECORDED_REPORT = "9a1c5d3"


def flr2sp_lines(out: Path, keep: Path, report_dir: Path) -> list[str]:
    """Every FL-R²SP item's section from the committed records under ``out`` (missing, or made
    by uncommitted edits: "not run", with the command that computes it)."""
    summaries = {i: d for i in ITEMS if (d := load_summary(out, i)) is not None}
    head = [
        "## The FL-R²SP items: what is recorded",
        "",
        "Each item below is computed from its committed record under `records/results/` "
        "(`<item>/summary.json`, `summary.csv`, `runs.csv`, `provenance.json`; made by "
        "`python -m experiments.flr2sp.<item>`) and only when every run of it was made by a "
        "committed code version; otherwise it says *not run* with the command that computes "
        f"it. Recorded: {len(summaries)} of {len(ITEMS)} items. The report of commit "
        f"{UNRECORDED_REPORT} showed numbers for the others from a run cache that was never "
        f"committed (`git show {UNRECORDED_REPORT}:experiments/REPORT.md`); they are not "
        "repeated here, as no committed record holds their runs.",
        "",
    ]
    return head + [
        line for item in ITEMS for line in item_lines(out, keep, item, summaries, report_dir)
    ]

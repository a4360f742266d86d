"""The generated blocks of this project's documents: each result figure a document quotes.

Two kinds:

* a **quote** of REPORT.md (:data:`QUOTES`): paragraphs (chosen by how they start) of one of
  its sections. REPORT.md is itself rebuilt from the committed records
  (``tests/experiments/test_report_rebuild.py``), so a quote is a function of the records;
* a **record** rendered directly: ``main-job-output`` (``records/results/main_job``, one run
  of ``bash scripts/main.sh``) and ``robustness-table`` (``records/results/robustness``).

``python -m experiments.report`` rewrites the blocks of :data:`DOCS` after REPORT.md
(:func:`update_docs`); ``tests/experiments/test_doc_blocks.py`` fails when a committed document's
block differs from what the records give. A document places a block with
``<!-- BEGIN generated: NAME -->`` / ``<!-- END generated: NAME -->`` (any Markdown file).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from experiments.common import provenance
from experiments.common.doc_blocks import BlockError, fill

__all__ = ["BLOCKS", "DOCS", "QUOTES", "Quote", "render", "update_docs"]

#: Documents whose blocks the report rewrites (relative to the repository root); a block in any
#: other tracked Markdown file is refused by ``tests/experiments/test_doc_blocks.py``.
DOCS = (
    "README.md",
    "experiments/README.md",
    "docs/paper-notes.md",
    "docs/federated.md",
    "docs/deployment.md",
    "docs/cluster.md",
    "benchmarks/README.md",
)


@dataclass(frozen=True)
class Quote:
    """Paragraphs of the REPORT.md section ``heading`` that start with one of ``starts``
    (every paragraph when empty), in the section's order."""

    heading: str
    starts: tuple[str, ...] = ()


_REAL = "Real: Fig. {} — "
QUOTES: MappingProxyType[str, Quote] = MappingProxyType(
    {
        "fl-recorded": Quote("The FL-R²SP items: what is recorded", ("Each item below",)),
        "table4": Quote("Table IV — per-round and convergence time"),
        "fig15": Quote("Fig. 15 — final accuracy per scheme (+ FedBuff)"),
        "filter-help-laptop": Quote(
            "Making the filter help", ("Runs:", "| partition", "| candidate")
        ),
        "filter-help-main-job": Quote(
            "Making the filter help: the main job (`flwr run .`, digits)",
            ("Runs:", "| partition", "| candidate", "The main job ("),
        ),
        "filter-help-mid": Quote(
            "Making the filter help: mid scale (64 clients, tau 50)",
            ("Runs:", "| partition", "| candidate", "The mid-scale CPU setting"),
        ),
        "paper-size": Quote(
            "Paper-size training: Table IV's convergence and Fig. 15 (128 clients, tau 100)"
        ),  # fmt: skip
        "outliers-scoring": Quote(
            "Outlier scoring at the paper's per-client setting: which cosine reference"
        ),
        "executor": Quote("Client-job executor: speed, tolerance, memory"),
        "cluster-real-fig8": Quote(
            _REAL.format(8) + "hardware, statistical and overall efficiency normalised by BSP",
            ("R²SP's iteration time is", "Verdicts:"),
        ),
        "cluster-real-fig11": Quote(
            _REAL.format(11) + "R²SP batch tuning against none on heterogeneous workers",
            ("With tuning", "Verdicts:"),
        ),
        "cluster-real-fig14": Quote(
            _REAL.format(14) + "R²SP with tuning against BSP and SAFA with injected delays",
            ("R²SP with tuning:", "Verdicts:"),
        ),
        "selective-claims": Quote(
            "Cluster mode: selective reduce against partial and all reduce (simulations)",
            ("All selective-reduce claims",),
        ),
        "selective-real": Quote(
            "Cluster mode: selective reduce in the real runtime (CPU)",
            ("Scale:", "| scheme", "| ratio", "Verdicts:", "Provenance:", "Not run"),
        ),
        "dssync-real": Quote(
            "DS-Sync in the real runtime (CPU, emulated racks)", ("| scenario", "AR over")
        ),
        "osp-real": Quote(
            "OSP on the parameter-server runtime (small real runs on CPU)", ("- OSP", "Best OSP")
        ),
    }
)

#: The main job's summary lines the README shows, in its order (the README explains each).
MAIN_JOB_SHOWN = (
    "final accuracy",
    "time (run clock)",
    "avg pull",
    "avg round",
    "avg turn wait",
    "peak concurrent pulls",
    "jobs",
    "stragglers",
)


def _level(line: str) -> int:
    return len(line) - len(line.lstrip("#"))


def _section(report: str, heading: str) -> list[str]:
    lines = report.split("\n")
    for i, line in enumerate(lines):
        level = _level(line)
        if level and line[level:].strip() == heading:
            ends = (j for j in range(i + 1, len(lines)) if 0 < _level(lines[j]) <= level)
            return lines[i + 1 : next(ends, len(lines))]
    raise BlockError(f"REPORT.md has no section {heading!r}")


def _paragraphs(lines: Iterable[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return [p for p in out if p]


def quote(report: str, name: str, q: Quote) -> list[str]:
    """The lines of block ``name``: the chosen paragraphs of ``q.heading`` and where from."""
    # Figures stay in REPORT.md: their paths are relative to the root, not to a quoting doc.
    kept = [p for p in _paragraphs(_section(report, q.heading))
            if (not q.starts or p[0].startswith(q.starts))
            and not all(line.startswith("![") for line in p)]  # fmt: skip
    if not kept:
        raise BlockError(f"block {name!r}: no paragraph of {q.heading!r} starts with {q.starts}")
    out: list[str] = []
    for p in kept:
        out += [*p, ""]
    return [*out, f"*Generated from the records: REPORT.md, section “{q.heading}”.*"]


def main_job_block(records: Path) -> list[str]:
    """The main job's last progress line, summary lines (:data:`MAIN_JOB_SHOWN`) and the
    admission line, as one recorded run of ``bash scripts/main.sh`` printed them."""
    path = records / "main_job" / "summary.json"
    if not path.exists():
        return ["Not on record (`python -m experiments.flr2sp.main_job` records one run)."]
    rec = json.loads(path.read_text())
    prov = json.loads((records / "main_job" / "provenance.json").read_text())
    run = prov["runs"][0]
    shown = [ln for ln in rec["lines"][1:] if ln.split(":")[0].strip() in MAIN_JOB_SHOWN]
    return [
        f"One run of `{rec['command']}` (commit {str(run['git_commit'])[:7]}, "
        f"{run['run_seconds']:.0f} s wall in all), its last progress line and summary "
        "(selected lines):",
        "",
        "```text",
        rec["last_progress"],
        rec["lines"][0],
        *shown,
        rec["admission"],
        "```",
        "",
        "*Generated from the record `records/results/main_job/` "
        "(`python -m experiments.flr2sp.main_job`).*",
    ]


def robustness_block(records: Path) -> list[str]:
    """The robustness item's table (accuracy / honest clients blacklisted per attack and
    option, mean over seeds) and which code made its runs, or the command that makes it."""
    item = records / "robustness"
    if not (item / "summary.json").exists():
        return [
            "Not on record yet: `OMP_NUM_THREADS=1 python -m experiments.flr2sp.robustness "
            "--scale laptop --seeds 0,1,2` writes `records/results/robustness/`."
        ]
    summary = json.loads((item / "summary.json").read_text())
    prov_path = item / "provenance.json"
    prov = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    seeds = ", ".join(map(str, summary["seeds"]))
    return [
        f"Scale `{summary['scale']}`, seeds {seeds}; cell = final accuracy / honest clients "
        "blacklisted (mean over seeds; *failed*: the run lost too many clients or ended "
        "non-finite). " + provenance.summarise(prov),
        "",
        *summary["table_md"].rstrip("\n").splitlines(),
        "",
        "*Generated from the record `records/results/robustness/` "
        "(`summary.json`, `provenance.json`).*",
    ]


#: Every block name this project defines.
BLOCKS = (*QUOTES, "main-job-output", "robustness-table")


def render(name: str, report: str, records: Path) -> list[str]:
    """The lines of block ``name`` from the REPORT.md text ``report`` and the records root."""
    if name in QUOTES:
        return quote(report, name, QUOTES[name])
    if name == "main-job-output":
        return main_job_block(records)
    if name == "robustness-table":
        return robustness_block(records)
    raise BlockError(f"unknown generated block {name!r}; known: {', '.join(BLOCKS)}")


def update_docs(root: Path, report: str, records: Path, docs: Sequence[str] = DOCS) -> list[Path]:
    """Rewrite the blocks of each existing document of ``docs`` (relative to ``root``);
    return those whose text changed."""
    changed = []
    for rel in docs:
        path = root / rel
        if not path.exists():
            continue
        text = path.read_text()
        new = fill(text, lambda n: render(n, report, records), rel)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed

"""Build ``experiments/REPORT.md`` from the result files: ours beside the paper's.

Reads ``<out>/<item>/summary.json`` of every item (missing items are listed
as not run) and, for the cluster mode, the published CSVs under
``experiments/report/cluster_twin`` and ``experiments/report/cluster_real``
(:mod:`experiments.r2sp_cluster.report`), draws the summary plots (:mod:`experiments.flr2sp.plots`), copies the
summary CSVs and the figures worth keeping into ``experiments/report/`` and
writes the report, one section per item, with our mean ± std, the paper's
number, the ratio ours / paper, a verdict by the stated rules of
:mod:`experiments.common.verdicts` (cells the profile was fitted to are marked, never
called reproductions) and a reading whose every figure is computed
(:mod:`experiments.flr2sp.report_text`). Each section says which code version
computed its runs (``<item>/provenance.json``).

Run: ``python -m experiments.report [--out experiments/results]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from experiments.common import provenance
from experiments.common.conf import TRAINING
from experiments.common.run_cache import rekey_runs
from experiments.flr2sp import paper
from experiments.flr2sp.plots import make_plots
from experiments.flr2sp.previous_report import comparison_lines
from experiments.flr2sp.report_paper import executor_lines, sec_paper_scale
from experiments.flr2sp.report_tables import (
    sec_fig15,
    sec_fig16,
    sec_fig17,
    sec_table2,
    sec_table4,
    sec_table5,
)
from experiments.flr2sp.report_tables_more import (
    sec_c_sweep,
    sec_fig18,
    sec_outliers,
    sec_outliers_scoring,
)
from experiments.flr2sp.report_text import notes, scale_text
from experiments.r2sp_cluster.report import cluster_lines

HERE = Path(__file__).resolve().parent
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
ITEMS = (
    "table2",
    "table4",
    "table5",
    "fig15",
    "fig16",
    "fig17",
    "fig18",
    "c_sweep",
    "outliers",
    "outliers_scoring",
    "paper_scale",
)


SECTIONS = {
    "table2": ("Table II — communication slowdown under contention", sec_table2),
    "table4": ("Table IV — per-round and convergence time", sec_table4),
    "table5": ("Table V — push/pull time and communication speedup", sec_table5),
    "fig15": ("Fig. 15 — final accuracy per scheme (+ FedBuff)", sec_fig15),
    "fig16": ("Fig. 16 — client phases (Gantt)", sec_fig16),
    "fig17": ("Fig. 17 — server egress peaks", sec_fig17),
    "fig18": ("Fig. 18 — round time vs group size", sec_fig18),
    "c_sweep": ("Round time and accuracy vs C", sec_c_sweep),
    "outliers": ("Outlier filter precision/recall and false positives", sec_outliers),
    "outliers_scoring": (
        "Outlier scoring at the paper's per-client setting: which cosine reference",
        sec_outliers_scoring,
    ),
    "paper_scale": (
        "Paper-size training: Table IV's convergence and Fig. 15 ("
        f"{TRAINING['paper']['num_partitions']} clients, tau "
        f"{TRAINING['paper']['local_iterations']})",
        sec_paper_scale,
    ),
}


def _load(out: Path, item: str, name: str) -> dict | None:
    path = out / item / name
    return json.loads(path.read_text()) if path.exists() else None


def _item(out: Path, keep: Path, item: str, summaries: dict[str, dict]) -> list[str]:
    """One item's section: provenance, table, kept figures and its computed reading."""
    title, section = SECTIONS[item]
    lines = [f"## {title}", ""]
    d = summaries.get(item)
    if d is None:
        return lines + [f"Not run (no `{item}/summary.json`): `python -m experiments.flr2sp.{item}`.", ""]
    prov = _load(out, item, "provenance.json")
    lines += [
        f"Scale `{d['scale']}`, seeds {d['seeds']}. Paper: {paper.CLAIMS.get(item, '')}",
        "",
        provenance.summarise(prov) if prov else "Runs: code version not recorded.",
        "",
    ]
    lines += section(d) + [""]
    lines += missing_lines(item, d)
    previous = comparison_lines(item, d, HERE / "report")
    lines += previous + ([""] if previous else [])
    for name in [f"{item}.csv"] + KEEP.get(item, []):
        src = out / item / ("summary.csv" if name.endswith(".csv") else name)
        if src.exists():
            shutil.copyfile(src, keep / (name if name.endswith(".csv") else f"{item}-{name}"))
            if name.endswith(".png"):
                lines += [f"![{item} {name}](report/{item}-{name})", ""]
    note = notes().get(item)
    return lines + ([note(d, summaries), ""] if note else [])


def missing_lines(item: str, d: dict) -> list[str]:
    """The runs an item left out because they were not cached (``--skip-training``), with the
    command that computes them (items other than ``paper_scale``, which lists its own)."""
    miss = d.get("missing") or []
    if not miss or item == "paper_scale":
        return []
    what = ", ".join(f"{m.get('scheme') or m.get('case')} seed {m['seed']}" for m in miss)
    seeds = ",".join(dict.fromkeys(str(m["seed"]) for m in miss))
    return [
        f"Not cached, left out ({len(miss)} runs: {what}); computed by "
        f"`OMP_NUM_THREADS=1 python -m experiments.flr2sp.{item} --scale {d['scale']} --seeds {seeds}`.",
        "",
    ]


def build(out: Path, dest: Path, reuse: str | None = None) -> str:
    """Write the summary plots, copy kept files to ``dest/report`` and return the Markdown."""
    rekey_runs(out)  # no-op unless caches predate a change of the key scheme
    make_plots(out)
    keep = dest / "report"
    keep.mkdir(parents=True, exist_ok=True)
    summaries = {i: d for i in ITEMS if (d := _load(out, i, "summary.json")) is not None}
    lines = [
        "# FL-R²SP reproduction report",
        "",
        f"Generated by `python -m experiments.report` on {time.strftime('%Y-%m-%d %H:%M')}"
        " from `experiments/results/`: every number below is computed from the cached runs "
        "(`<item>/summary.json`), the scale settings and the paper's numbers "
        "(`experiments/flr2sp/paper.py`).",
        "",
        *scale_text(provenance.code_version(), provenance.reuse_mode(reuse)),
    ]
    for item in ITEMS:
        lines += _item(out, keep, item, summaries)
    # Issue 10's executor figures: parsed once from the GPU checks' logs into report/.
    lines += executor_lines(HERE / "report")
    # The cluster items are published with their figures under report/ (committed), not cached
    # under --out: the section reads those files.
    lines += cluster_lines(HERE / "report")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="experiments/results", help="results root")
    parser.add_argument(
        "--dest", default=str(HERE), help="folder of REPORT.md (default: experiments/)"
    )
    parser.add_argument(
        "--reuse-runs",
        choices=provenance.REUSE_MODES,
        default=None,
        help="the reuse mode the item summaries were made with (printed; default: "
        f"${provenance.REUSE_ENV} or current)",
    )
    ns = parser.parse_args(argv)
    dest = Path(ns.dest)
    text = build(Path(ns.out), dest, ns.reuse_runs)
    (dest / "REPORT.md").write_text(text)
    print(f"wrote {dest / 'REPORT.md'}")


if __name__ == "__main__":
    main()

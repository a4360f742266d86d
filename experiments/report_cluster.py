"""The cluster-mode section of REPORT.md, computed from the published cluster CSVs.

Two sources, both committed so the report regenerates without rerunning anything:

* ``experiments/report/cluster_twin/<item>/summary.csv``: the virtual-time twin at the paper's
  sizes (``python -m experiments.cluster_twin --publish experiments/report/cluster_twin``);
  hardware efficiency only;
* ``experiments/report/cluster_real/<item>/{summary.csv,claims.csv,summary.json}``: small real
  training runs on this machine's CPU (``python -m experiments.cluster_real --publish
  experiments/report/cluster_real``);
* ``experiments/report/selective/<item>/{runs.csv,claims.csv,*.png}``: the selective-reduce
  paper's simulations (``python -m experiments.selective --publish
  experiments/report/selective``): every claim with its verdict as
  :mod:`experiments.selective_setup` states the rules, and min / median / max over the trials.

Every number in the section comes from those files (the paper's numbers are columns of the
summaries) or from :mod:`experiments.cluster_twin_setup` (the verdict band); no string literal
here holds a figure (a test checks it, as for :mod:`experiments.report_text`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.cluster_twin_setup import BAND
from experiments.markdown_cells import cell as _cell
from experiments.markdown_cells import num as _num
from experiments.markdown_cells import read_csv as _read_csv
from experiments.report_dssync import dssync_lines
from experiments.report_osp import osp_lines
from experiments.selective import ITEMS as SELECTIVE_ITEMS
from experiments.selective_setup import __doc__ as SELECTIVE_SETUP

TWIN = {
    "fig8": "mean iteration time normalised by BSP (hardware efficiency)",
    "fig9": "inter-update gaps at the parameter servers, VGG-16",
    "fig12": "R²SP's speed-up over BSP against the link bandwidth",
    "fig13": "R²SP's iteration and blocking time against r",
    "table3": "blocking without tuning and the tuned batch sizes, cluster B",
    "fig14": "injected delays: BSP, ASP, SSP, SAFA, R²SP with and without tuning",
}
REAL = {
    "fig8": "hardware, statistical and overall efficiency normalised by BSP",
    "fig11": "R²SP batch tuning against none on heterogeneous workers",
    "fig14": "R²SP with tuning against BSP and SAFA with injected delays",
}
VERDICT_WORDS = ("reproduced", "same direction", "differs", "holds", "does not hold")
#: Columns of a selective item's runs.csv shown as min / median / max (the wait item: its own).
SELECTIVE_METRICS = ("sync_time_s", "scale", "total_iterations", "total_syncs")
#: Items whose table shows other metrics than SELECTIVE_METRICS.
ITEM_METRICS = {"fig7": ("wasted_wait_pct", "wasted_slot_pct", "waited_s", "wait_decisions")}
SPREAD = ("_min", "_median", "_max")


_ROMAN = ((10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))


def _roman(n: int) -> str:
    out = ""
    for value, digits in _ROMAN:
        while n >= value:
            out, n = out + digits, n - value
    return out


def _title(item: str) -> str:
    """'Fig. N' or 'Table <roman N>' from the item key (fig8, table3)."""
    if item.startswith("table"):
        return "Table " + _roman(int(item.removeprefix("table")))
    return "Fig. " + item.removeprefix("fig")


def md_table(rows: Sequence[Mapping[str, str]], skip: Sequence[str] = ()) -> list[str]:
    """Rows of a CSV as a Markdown table (columns in file order, ``skip`` left out)."""
    if not rows:
        return []
    keys = [k for k in rows[0] if k not in skip]
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(_cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    return out


def tally(rows: Sequence[Mapping[str, str]]) -> str:
    """How many cells of the verdict and claim columns carry each verdict."""
    seen: Counter[str] = Counter()
    for row in rows:
        for key, value in row.items():
            if (key.startswith(("verdict", "claim")) or key == "exact") and value in VERDICT_WORDS:
                seen[value] += 1
    return ", ".join(f"{word} {seen[word]}" for word in VERDICT_WORDS if seen[word]) or "none"


def _ratio(a: Any, b: Any) -> float | None:
    try:
        return float(a) / float(b)
    except (TypeError, ValueError, ZeroDivisionError):
        return None


def _setup(cfg: Mapping[str, Any]) -> str:
    """One line of a real item's setup, from its stored configuration."""
    bw = cfg.get("server_bandwidth_mb_s") or 0
    link = f"PS ingress and egress each capped at {bw:g} MB/s" if bw else "PS links unthrottled"
    extra = ""
    if cfg.get("compute_multipliers"):
        extra += f", compute multipliers {', '.join(f'{m:g}' for m in cfg['compute_multipliers'])}"
    if cfg.get("iteration_delays"):
        extra += f", injected delays {', '.join(f'{d:g}' for d in cfg['iteration_delays'])} s"
    return (
        f"{cfg['model']} on {cfg['dataset']}, {cfg['workers']} workers, {cfg['servers']} PS, "
        f"{link}, batch {cfg['batch_size']}, lr {cfg['lr']:g}, at most "
        f"{cfg['max_iterations']} iterations per worker, loss target {cfg['loss_threshold']:g} "
        f"held for {cfg['convergence_window']} iterations{extra}"
    )


def _real_reading(item: str, rows: Sequence[Mapping[str, str]]) -> str:
    """The computed one-paragraph reading of a real item's summary."""
    by = {r.get("scheme", r.get("tuning", "")): r for r in rows}
    key = {"fig8": "r2sp", "fig11": "idle", "fig14": "r2sp+tuning"}.get(item, "")
    if key not in by:
        return ""
    r = by[key]

    def n(col: str, digits: int = 2) -> str:
        return _num(r.get(col), digits)

    if item == "fig8":
        return (
            f"R²SP's iteration time is {n('hardware_norm')} of BSP's (paper "
            f"{n('paper_hardware_norm')}: {r.get('verdict_hardware')}); its iterations to the "
            f"target {n('statistical_norm')} of BSP's; its time to the target "
            f"{n('overall_norm')} of BSP's (paper {n('paper_overall_norm')}: "
            f"{r.get('verdict_overall')})."
        )
    if item == "fig11":
        none = by.get("none", {})
        return (
            f"With tuning (mean batch {n('mean_batch', 1)} against "
            f"{_num(none.get('mean_batch'), 1)}) the target was reached in {r.get('reached')} "
            f"seeds against {none.get('reached')} without, and the time to it is "
            f"{n('time_ratio')} of the untuned time (paper {n('paper_time_ratio')}: "
            f"{r.get('verdict_time')}); final mean loss {n('final_loss')} against "
            f"{_num(none.get('final_loss'))} without tuning. The workers share this machine's "
            "cores: the compute multipliers emulate slower machines by sleeping, but the tuned "
            "batches take real CPU from every worker, so a tuned iteration took "
            f"{_num(_ratio(r.get('iteration_s'), none.get('iteration_s')))} times as long as "
            "an untuned one, against the paper's premise of dedicated devices; and the linear "
            "learning-rate scaling of the much larger batches made the loss spike before it "
            "settled (figure)."
        )
    return (
        f"R²SP with tuning: iteration time {n('iteration_norm')} of BSP's, iterations to the "
        f"target {n('statistical_norm')} of BSP's, time to the target {n('time_vs_second')} of "
        f"the second-best scheme's ({r.get('second_best')}; paper {n('paper_time_vs_second')}: "
        f"{r.get('verdict_time')})."
    )


def _twin_lines(root: Path) -> list[str]:
    lines = ["### Virtual-time twin at the paper's sizes (hardware efficiency only)", ""]
    for item, what in TWIN.items():
        rows = _read_csv(root / "cluster_twin" / item / "summary.csv")
        lines += [f"#### Twin: {_title(item)} — {what}", ""]
        if not rows:
            lines += [f"Not published (no `cluster_twin/{item}/summary.csv`).", ""]
            continue
        lines += [*md_table(rows), "", f"Verdicts: {tally(rows)}.", ""]
        png = root / "cluster_twin" / item / f"{item}.png"
        if png.exists():
            lines += [f"![twin {item}](report/cluster_twin/{item}/{item}.png)", ""]
    return lines


def _real_lines(root: Path) -> list[str]:
    lines = [
        "### Small real runs on CPU (statistical and overall efficiency)",
        "",
        "Every scheme of an item uses the same learning rate. BSP applies the mean of the "
        "workers' gradients once per iteration; the other schemes apply each push, so per "
        "iteration they take one step per worker (larger ones with tuning's linear scaling). "
        "Iterations and time to the target follow the runtime's convergence rule (the mean of "
        "the workers' latest batch losses below the target for the stated window), replayed on "
        "each run's pushes; *reached* counts the seeds that met it within the iteration cap.",
        "",
    ]
    for item, what in REAL.items():
        d = root / "cluster_real" / item
        rows = _read_csv(d / "summary.csv")
        lines += [f"#### Real: {_title(item)} — {what}", ""]
        if not rows or not (d / "summary.json").exists():
            lines += [f"Not run (no `cluster_real/{item}/summary.csv`).", ""]
            continue
        summary = json.loads((d / "summary.json").read_text())
        seeds = ", ".join(str(s) for s in summary["seeds"])
        lines += [f"Setup: {_setup(summary['config'])}; seeds {seeds}.", ""]
        lines += [*md_table(rows), ""]
        claims = _read_csv(d / "claims.csv")
        lines += [f"- {c['claim']}: **{c['verdict']}**" for c in claims] + ([""] if claims else [])
        reading = _real_reading(item, rows)
        lines += ([reading, ""] if reading else []) + [f"Verdicts: {tally(rows + claims)}.", ""]
        if (d / f"{item}.png").exists():
            lines += [f"![real {item}](report/cluster_real/{item}/{item}.png)", ""]
    return lines


def cluster_lines(root: Path) -> list[str]:
    """The whole cluster section; ``root`` is the folder holding ``cluster_twin/`` and
    ``cluster_real/`` (``experiments/report``)."""
    lo, hi = BAND
    return [
        "## Cluster mode: parameter-server training (R²SP, BSP, ASP, SSP, SAFA)",
        "",
        "Two kinds of results, never mixed: the **virtual-time twin** runs the cluster "
        "policies at the paper's sizes over an emulated network (no model is trained; "
        "`python -m experiments.cluster_twin`), and **small real runs** train on this "
        "machine's CPU through the cluster runtime (gloo on loopback, every rank a process; "
        "`python -m experiments.cluster_real`), far smaller than the paper's clusters and on a "
        "shared, loaded machine, so their times vary from run to run. Nothing here ran on a GPU.",
        "",
        f"Verdict rule: a number the paper prints is *reproduced* when ours / paper lies in "
        f"[{lo:g}, {hi:g}], *same direction* when both lie on the same side of the stated "
        "baseline (BSP, or no tuning), else *differs*; a claim without a number *holds* or "
        "*does not hold*.",
        "",
        *_twin_lines(root),
        *_real_lines(root),
        *selective_lines(root),
        *dssync_lines(root),
        *osp_lines(root),
    ]


def spread_table(rows: Sequence[Mapping[str, str]], metrics: Sequence[str]) -> list[str]:
    """A runs.csv as Markdown: its key columns, then each metric as 'min / median / max'."""
    if not rows:
        return []
    keys = [k for k in rows[0] if not k.endswith(SPREAD)]
    shown = [m for m in metrics if m + SPREAD[1] in rows[0]]
    out = ["| " + " | ".join([*keys, *shown]) + " |", "|" + "---|" * (len(keys) + len(shown))]
    for r in rows:
        cells = [_cell(r.get(k, "")) for k in keys]
        cells += [" / ".join(_cell(r.get(m + end, "")) for end in SPREAD) for m in shown]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _selective_item(root: Path, item: str, title: str) -> list[str]:
    d = root / "selective" / item
    runs, claims = _read_csv(d / "runs.csv"), _read_csv(d / "claims.csv")
    lines = [f"### {title}", ""]
    if not runs:
        return [*lines, f"Not published (no `selective/{item}/runs.csv`).", ""]
    trials = sorted({r.get("trials", "") for r in runs})
    lines += [f"![selective {item}](report/selective/{item}/{png.name})"
              for png in sorted(d.glob("*.png"))] + [""]  # fmt: skip
    lines += [*md_table(claims), "", f"Verdicts: {tally(claims)}.", ""]
    metrics = ITEM_METRICS.get(item, SELECTIVE_METRICS)
    lines += [f"Trials per point: {', '.join(trials)}; each cell min / median / max over them.", ""]
    return [*lines, *spread_table(runs, metrics), ""]


def selective_lines(root: Path) -> list[str]:
    """The selective-reduce section; ``root`` holds ``selective/`` (``experiments/report``)."""
    setup = SELECTIVE_SETUP or ""
    rules = setup[setup.find("Verdict rules") :].strip() if "Verdict rules" in setup else ""
    claims = [c for item in SELECTIVE_ITEMS for c in _read_csv(root / "selective" / item /
                                                               "claims.csv")]  # fmt: skip
    lines = [
        "## Cluster mode: selective reduce against partial and all reduce (simulations)",
        "",
        "The selective-reduce paper is simulation-only, and so is this section: the "
        "all-reduce-family controllers run in virtual time (`fl_r2sp.cluster.sim.reduce.engine`, "
        "`python -m experiments.selective`); nothing is trained. The setup and our choices are "
        "in `experiments/report/selective/REPORT.md` and `experiments/selective_setup.py`; "
        "real runs of the same controllers on this machine are in the README (cluster mode).",
        "",
        rules,
        "",
        f"All selective-reduce claims: {tally(claims)}.",
        "",
    ]
    for item, (_, title) in SELECTIVE_ITEMS.items():
        lines += _selective_item(root, item, title)
    return lines

"""Plot step: summary figures drawn from each item's ``summary.json``.

The per-run figures (Gantt charts, egress traces, accuracy curves) are drawn
by the item scripts themselves, which hold the raw runs; this step draws the
across-run figures (ours beside the paper's where it prints numbers) and
needs only the summaries. Missing items are skipped.

Run: ``python -m experiments.flr2sp.plots [--out records/results]``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from experiments.flr2sp import paper


def _load(out: Path, item: str) -> dict[str, Any] | None:
    path = out / item / "summary.json"
    return json.loads(path.read_text()) if path.exists() else None


def _bars(ax, labels: list[str], series: dict[str, tuple[list, list]]) -> None:
    """Grouped bars: series name -> (values, errors); None values drawn as 0."""
    x = np.arange(len(labels))
    width = 0.8 / max(1, len(series))
    for i, (name, (vals, errs)) in enumerate(series.items()):
        v = [0.0 if a is None else a for a in vals]
        e = [0.0 if a is None else a for a in errs]
        ax.bar(x + i * width - 0.4 + width / 2, v, width, yerr=e, label=name, capsize=2)
    ax.set_xticks(x, labels)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def _ours_vs_paper(
    data: dict, path: Path, key: str, paper_table: dict, title: str, unit: str
) -> None:
    """Bars per model: ours (fair, fcfs; mean ± std of ``key``) beside the paper's."""
    rows = data["table"]
    labels = sorted({r["model"] for r in rows})
    series = {
        f"ours ({d})": (
            [_pick(rows, m, d, f"{key}_mean") for m in labels],
            [_pick(rows, m, d, f"{key}_std") for m in labels],
        )
        for d in ("fair", "fcfs")
    }
    series["paper"] = ([paper_table.get(m, {}).get(key) for m in labels], [0] * len(labels))
    _save(path, title, unit, labels, series)


def table2(data: dict, path: Path) -> None:
    _ours_vs_paper(
        data, path, "slowdown", paper.TABLE2, "Table II: slowdown 128 clients vs 1 (BSP)", "x"
    )


def table5(data: dict, path: Path) -> None:
    _ours_vs_paper(
        data,
        path,
        "speedup",
        paper.TABLE5,
        "Table V: communication time reduction, FL-R²SP vs BSP",
        "fraction",
    )


def fig18(data: dict, path: Path) -> None:
    """One panel per model (own y-axis): client cycle per variant, group round of the baseline."""
    rows = data["table"]
    model_names = sorted({r["model"] for r in rows})
    fig = Figure(figsize=(max(7.0, 4.2 * len(model_names)), 4.0), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(model_names)))
    for ax, model in zip(axes, model_names, strict=True):
        for variant in dict.fromkeys(r.get("variant", "baseline") for r in rows):
            mine = sorted(
                (
                    r
                    for r in rows
                    if r["model"] == model and r.get("variant", "baseline") == variant
                ),
                key=lambda r: r["group_size"],
            )
            g = [r["group_size"] for r in mine]
            cyc = [r["avg_cycle_s_mean"] for r in mine]
            line = ax.errorbar(
                g,
                cyc,
                [r["avg_cycle_s_std"] for r in mine],
                marker="o",
                markersize=3,
                label=f"{variant}: client cycle",
            )
            best = int(np.argmin(cyc))
            ax.plot([g[best]], [cyc[best]], "*", markersize=12, color=line[0].get_color())
            if variant == "baseline":
                ax.plot(
                    g,
                    [r["avg_round_s_mean"] for r in mine],
                    "--",
                    marker=".",
                    color=line[0].get_color(),
                    label="baseline: group round",
                )
        ax.set_xscale("log", base=2)
        ax.set(xlabel="group size", ylabel="virtual seconds", title=model)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("Fig. 18: round time vs group size (stars: minima)")
    fig.savefig(path, dpi=110)


def c_sweep(data: dict, path: Path) -> None:
    fig = Figure(figsize=(9, 3.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    for strategy in ("bsp", "fl-r2sp"):
        rows = sorted(
            (r for r in data["table"] if r["strategy"] == strategy), key=lambda r: r["fraction"]
        )
        left.errorbar(
            [r["fraction"] for r in rows],
            [r["avg_cycle_s_mean"] for r in rows],
            [r["avg_cycle_s_std"] for r in rows],
            marker="o",
            label=strategy,
        )
    acc = sorted(data.get("accuracy", []), key=lambda r: r["fraction"])
    right.errorbar(
        [r["fraction"] for r in acc],
        [r["final_accuracy_mean"] for r in acc],
        [r["final_accuracy_std"] for r in acc],
        marker="o",
        label="fl-r2sp",
    )
    left.set(xlabel="C", ylabel="client cycle (s)", title="round time vs C")
    right.set(xlabel="C", ylabel="final accuracy", title="accuracy vs C")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)


def fig15(data: dict, path: Path) -> None:
    rows = data["table"]
    models = sorted({r["model"] for r in rows})
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    series = {
        m: (
            [_get(rows, m, s, "final_accuracy_mean") for s in schemes],
            [_get(rows, m, s, "final_accuracy_std") for s in schemes],
        )
        for m in models
    }
    _save(path, "Fig. 15: final test accuracy", "accuracy", schemes, series)


def _pick(rows: list[dict], model: str, disc: str, key: str) -> Any:
    return next((r[key] for r in rows if r["model"] == model and r["discipline"] == disc), None)


def _get(rows: list[dict], model: str, scheme: str, key: str) -> Any:
    return next((r[key] for r in rows if r["model"] == model and r["scheme"] == scheme), None)


def _save(path: Path, title: str, ylabel: str, labels: list[str], series: dict) -> None:
    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.add_subplot()
    _bars(ax, labels, series)
    ax.set(title=title, ylabel=ylabel)
    fig.savefig(path, dpi=110)


def outliers_scoring(data: dict, path: Path) -> None:
    """Median cosine per group round, outliers vs regular clients: a panel per mode x reference."""
    per = data.get("per_round", [])
    modes = list(dict.fromkeys(r["mode"] for r in per))
    refs = list(dict.fromkeys(r["reference"] for r in per))
    if not per:
        return
    fig = Figure(figsize=(3.2 * len(refs), 2.8 * len(modes)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(modes), len(refs), sharey=True, squeeze=False))
    for i, mode in enumerate(modes):
        for j, ref in enumerate(refs):
            ax = axes[i, j]
            rows = sorted(
                (r for r in per if (r["mode"], r["reference"]) == (mode, ref)),
                key=lambda r: r["round"],
            )
            x = np.array([r["round"] for r in rows])
            for who in ("outlier", "regular"):
                m = np.array([r[f"median_{who}_mean"] for r in rows], dtype=float)
                sd = np.array([r[f"median_{who}_std"] or 0.0 for r in rows], dtype=float)
                ax.plot(x, m, marker=".", label=who)
                ax.fill_between(x, m - sd, m + sd, alpha=0.2, linewidth=0)
            beta = data.get("rule", {}).get("beta")
            if beta is not None:
                ax.axhline(beta, color="grey", linestyle=":", linewidth=1)
            ax.set(title=f"{mode}, {ref}", xlabel="group round")
            ax.grid(alpha=0.3)
        axes[i, 0].set_ylabel("median cosine")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("median cosine per group round (mean ± std over seeds; dotted: beta)")
    fig.savefig(path, dpi=110)


PLOTS: dict[str, Callable[[dict, Path], None]] = {
    "table2": table2,
    "table5": table5,
    "fig15": fig15,
    "fig18": fig18,
    "c_sweep": c_sweep,
    "outliers_scoring": outliers_scoring,
}


def make_plots(out: Path) -> list[Path]:
    """Draw every summary figure whose item has results; return the files written."""
    written = []
    for item, draw in PLOTS.items():
        data = _load(out, item)
        if data is None or not data.get("table"):
            continue
        path = out / item / f"{item}.png"
        draw(data, path)
        written.append(path)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="records/results", help="results root")
    ns = parser.parse_args(argv)
    for path in make_plots(Path(ns.out)):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

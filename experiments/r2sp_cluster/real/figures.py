"""Figures of the real cluster runs (:mod:`experiments.r2sp_cluster.real.run`): bars of the
normalised efficiencies and loss-over-time curves (the runtime's convergence measure: the mean
of the live workers' latest batch losses), matplotlib Agg."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.r2sp_cluster.twin.setting import figure, save

Records = Mapping[tuple[str, int], Mapping[str, Any]]


def _curves(ax: Any, recs: Records, labels: Sequence[str], seeds: Sequence[int],
            target: float | None) -> None:  # fmt: skip
    colours = {lab: f"C{i}" for i, lab in enumerate(labels)}
    for lab in labels:
        for j, seed in enumerate(seeds):
            curve = recs[(lab, seed)]["curve"]
            ax.plot([c[0] for c in curve], [c[2] for c in curve], color=colours[lab],
                    linestyle="-" if j == 0 else ":", label=f"{lab} (seed {seed})")  # fmt: skip
    if target is not None:
        ax.axhline(target, color="grey", linewidth=0.8, linestyle="--", label="target")
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("mean of workers' latest loss")
    ax.legend(fontsize=7)


def _bars(ax: Any, table: Sequence[Mapping[str, Any]], key: str,
          metrics: Sequence[tuple[str, str]]) -> None:  # fmt: skip
    width = 0.8 / len(metrics)
    names = [str(r[key]) for r in table]
    for i, (col, text) in enumerate(metrics):
        vals = [r.get(col) for r in table]
        xs = [k + i * width for k in range(len(names))]
        ax.bar(xs, [0.0 if v is None else v for v in vals], width, label=text)
        for x, v in zip(xs, vals, strict=True):
            if v is None:
                ax.text(x, 0.02, "n/a", ha="center", fontsize=7, rotation=90)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))], names)
    ax.set_ylabel("normalised by BSP")
    ax.legend(fontsize=7)


def plot_fig8(path: Path, table: Sequence[Mapping[str, Any]], recs: Records,
              seeds: Sequence[int]) -> Path:  # fmt: skip
    """Fig. 8: hardware / statistical / overall efficiency per scheme, and the loss curves."""
    fig, ax = figure(path)
    fig.set_size_inches(11, 4)
    ax.remove()
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    _bars(left, table, "scheme", (("hardware_norm", "iteration time"),
                                  ("statistical_norm", "iterations to target"),
                                  ("overall_norm", "time to target")))  # fmt: skip
    cfg = next(iter(recs.values()))["config"]
    left.set_title(f"Fig. 8 (real, CPU): {cfg['model']}, {cfg['workers']} workers, "
                   f"{cfg['servers']} PS at {cfg['server_bandwidth_mb_s']:g} MB/s")  # fmt: skip
    target = cfg["loss_threshold"]
    _curves(right, recs, [str(r["scheme"]) for r in table], seeds, target)
    return save(fig, path)


def plot_fig11(path: Path, recs: Records, seeds: Sequence[int]) -> Path:
    """Fig. 11: loss over time of R²SP without and with batch tuning."""
    fig, ax = figure(path)
    cfg = next(iter(recs.values()))["config"]
    _curves(ax, recs, ("none", "idle"), seeds, cfg["loss_threshold"])
    ax.set_yscale("log")  # tuned runs spike by an order of magnitude before they settle
    mult = ", ".join(f"{m:g}" for m in cfg["compute_multipliers"])
    ax.set_title(f"Fig. 11 (real, CPU): R²SP tuning none vs idle, {cfg['model']}, "
                 f"multipliers {mult}", fontsize=9)  # fmt: skip
    return save(fig, path)


def plot_fig14(path: Path, table: Sequence[Mapping[str, Any]], recs: Records,
               seeds: Sequence[int]) -> Path:  # fmt: skip
    """Fig. 14: per-iteration time, iterations and time to target; loss curves."""
    fig, ax = figure(path)
    fig.set_size_inches(11, 4)
    ax.remove()
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    _bars(left, table, "scheme", (("iteration_norm", "iteration time"),
                                  ("statistical_norm", "iterations to target"),
                                  ("overall_norm", "time to target")))  # fmt: skip
    cfg = next(iter(recs.values()))["config"]
    delays = "/".join(f"{d:g}" for d in cfg["iteration_delays"])
    left.set_title(f"Fig. 14 (real, CPU): {cfg['model']}, delays {delays} s")
    target = cfg["loss_threshold"]
    _curves(right, recs, [str(r["scheme"]) for r in table], seeds, target)
    return save(fig, path)

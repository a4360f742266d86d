"""Fig. 15: final test accuracy of every scheme, with and without the outlier filter.

Schemes: BSP, BSP without the filter, ASP, FL-R²SP, FL-R²SP without the
filter, and FedAsync and FedBuff (added; not in the paper). Real training with 25%
outlier clients (Dirichlet alpha 0.1, others alpha 10). Each run stops when
the test accuracy stagnates for 10 evaluations (one per BSP-round
equivalent) or at the scale's round cap. Laptop scale: see conf.TRAINING.

Paper: FL-R²SP comparable to BSP; around 10% lost without the filter; ASP
far worse.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from experiments.common import eta
from experiments.common.run_cache import aggregate, finish, models, parse_args, say
from experiments.flr2sp.runs import training

#: name -> differences from the training defaults.
SCHEMES: dict[str, dict[str, Any]] = {
    "bsp": dict(strategy="bsp"),
    "bsp-nofilter": dict(strategy="bsp", outlier_filter=False),
    "asp": dict(strategy="asp", outlier_filter=False),
    "fedasync": dict(strategy="fedasync", outlier_filter=False),
    "fl-r2sp": dict(strategy="fl-r2sp"),
    "fl-r2sp-nofilter": dict(strategy="fl-r2sp", outlier_filter=False),
    "fedbuff": dict(strategy="fedbuff", outlier_filter=False),
}
METRICS = ("final_accuracy", "best_accuracy", "converged_at", "virtual_time_s")


def scheme_run(args, seed: int, model: str, name: str, cached_only: bool = False) -> dict | None:
    """The cached run of scheme ``name`` (shared with table4, outliers, c_sweep).

    ``cached_only=True`` (default False): None when the run is not cached.
    """
    diff = dict(SCHEMES[name])
    return training(args, seed, diff.pop("strategy"), model, cached_only=cached_only, **diff)


def on_grid(history: list[dict], grid: np.ndarray) -> np.ndarray:
    """Accuracy of the latest evaluation at each grid time (NaN before the first, after the end)."""
    times = np.array([h["time"] for h in history if "accuracy" in h], dtype=np.float64)
    accs = np.array([h["accuracy"] for h in history if "accuracy" in h], dtype=np.float64)
    out = np.full(grid.shape, np.nan)
    if times.size:
        idx = np.searchsorted(times, grid, side="right") - 1
        ok = (idx >= 0) & (grid <= times[-1])
        out[ok] = accs[idx[ok]]
    return out


def plot(args, model: str, histories: dict[str, list[list[dict]]]) -> None:
    """Test accuracy over virtual time per scheme: mean over seeds, band = min..max."""
    from matplotlib.figure import Figure

    end = max((h[-1]["time"] for runs in histories.values() for h in runs if h), default=1.0)
    grid = np.linspace(0.0, end, 400)
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for name, runs in histories.items():
        curves = np.array([on_grid(h, grid) for h in runs])
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no seed running
            mean, lo, hi = (f(curves, axis=0) for f in (np.nanmean, np.nanmin, np.nanmax))
        (line,) = ax.plot(grid, mean, linewidth=1.2, label=f"{name} ({len(runs)} seeds)")
        ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set(
        xlabel="virtual time (s)",
        ylabel="test accuracy",
        title=f"test accuracy, {model}: mean over seeds {list(args.seeds)}, band min..max",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path = args.item_dir / f"accuracy-{model}.png"
    fig.savefig(path, dpi=110)
    say(f"fig15: wrote {path}")


def filter_loss(table: list[dict]) -> list[dict]:
    """Accuracy lost without the filter, in points and relative, per model and scheme."""
    out = []
    index = {(r["model"], r["scheme"]): r for r in table}
    for (model, scheme), r in index.items():
        off = index.get((model, f"{scheme}-nofilter"))
        if off and r["final_accuracy_mean"] is not None and off["final_accuracy_mean"] is not None:
            pts = r["final_accuracy_mean"] - off["final_accuracy_mean"]
            out.append(
                dict(
                    model=model,
                    scheme=scheme,
                    loss_points=pts,
                    loss_relative=pts / r["final_accuracy_mean"],
                )
            )
    return out


def filter_pairs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The filter's gain per seed with both runs cached: final accuracy with the filter minus
    without, in points and relative to the accuracy with it (the paper's "lose around 10%")."""
    index = {(r["model"], r["scheme"], r["seed"]): r for r in rows}
    out = []
    for (model, scheme, seed), on in index.items():
        off = index.get((model, f"{scheme}-nofilter", seed))
        if off is None or on["final_accuracy"] is None or off["final_accuracy"] is None:
            continue
        pts = on["final_accuracy"] - off["final_accuracy"]
        out.append(
            dict(
                model=model,
                scheme=scheme,
                seed=seed,
                gain_points=pts,
                gain_relative=pts / on["final_accuracy"],
            )
        )
    return out


def main(argv=None) -> None:
    args = parse_args("fig15", __doc__, argv)
    rows, missing = [], []
    eta.plan(len(models(args, "training")) * len(args.seeds) * len(SCHEMES))
    for model in models(args, "training"):
        histories: dict[str, list[list[dict]]] = {}
        for seed in args.seeds:
            # The two shared schemes last: another item may be computing them meanwhile.
            for name in sorted(SCHEMES, key=lambda n: n in ("bsp", "fl-r2sp")):
                rec = scheme_run(args, seed, model, name)
                if rec is None:  # not cached under --skip-training
                    missing.append(dict(model=model, scheme=name, seed=seed))
                    continue
                rows.append(
                    dict(
                        model=model,
                        scheme=name,
                        seed=seed,
                        **{k: rec["summary"].get(k) for k in METRICS},
                    )
                )
                histories.setdefault(name, []).append(rec["history"])
        if histories:  # empty when --skip-training found nothing cached
            plot(args, model, {k: histories[k] for k in SCHEMES if k in histories})
    table = aggregate(rows, ("model", "scheme"), METRICS)
    pairs = aggregate(filter_pairs(rows), ("model", "scheme"), ("gain_points", "gain_relative"))
    extra = {"filter_loss": filter_loss(table), "filter_pairs": pairs, "missing": missing}
    finish(args, rows, table, extra)


if __name__ == "__main__":
    main()

"""Fig. 17: server egress (model pulls) trace, BSP vs FL-R²SP, with the peak ratio.

Peak = largest bytes per bin / bin width. The engine samples at 0.1 s; the
paper's nethogs refreshes every second, so peaks are also given for 1 s and
5 s bins (re-binned from the 0.1 s trace). Under fair sharing any burst of
pulls saturates the server link, so the 0.1 s peak is the link capacity for
both schemes and only coarser bins show BSP's burstiness. The first
:data:`WARMUP_ROUNDS` BSP round times are skipped: every scheme dispatches
the initial model to all clients at t = 0, a BSP-like burst that would set
both peaks. Timing-only, the Table V runs.

Paper: BSP's peak is about 3x FL-R²SP's for ResNet20.
"""

from __future__ import annotations

import numpy as np

from experiments.common.run_cache import aggregate, finish, load_traces, models, parse_args, say
from experiments.flr2sp.runs import NETWORKS, ratio, timing

BINS = (0.1, 1.0, 5.0)
ENGINE_BIN = 0.1
WARMUP_ROUNDS = 2


def peak(nbytes: np.ndarray, width: float) -> float:
    """Peak rate (bytes/s) after summing 0.1 s bins into bins of ``width`` seconds."""
    rates = rebin(nbytes, width)
    return float(np.sum(nbytes) / width) if rates.size == 0 else float(rates.max())


def rebin(nbytes: np.ndarray, width: float) -> np.ndarray:
    """Rates (bytes/s) of consecutive ``width``-second bins of the 0.1 s trace (tail dropped)."""
    k = max(1, int(round(width / ENGINE_BIN)))
    n = len(nbytes) // k * k
    return np.asarray(nbytes[:n], dtype=np.float64).reshape(-1, k).sum(axis=1) / (k * ENGINE_BIN)


def plot(args, model: str, disc: str, egress: dict, skip: int) -> None:
    """One panel per bin width of the table, both schemes, start-up burst left out."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 2.2 * len(BINS)), layout="constrained")
    axes = fig.subplots(len(BINS), 1, sharex=True)
    for ax, width in zip(axes, BINS, strict=True):
        for name, (_, nbytes) in egress.items():
            rate = rebin(nbytes[skip:], width) / 1e6
            t0 = skip * ENGINE_BIN
            ax.step(
                t0 + width * np.arange(len(rate)), rate, where="post", linewidth=0.8, label=name
            )
        ax.set(ylabel="MB/s", title=f"{width:g} s bins")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[-1].set_xlabel("virtual time (s), start-up burst left out")
    fig.suptitle(f"server egress, {model} ({disc})")
    path = args.item_dir / f"egress-{model}-{disc}.png"
    fig.savefig(path, dpi=110)
    say(f"fig17: wrote {path}")


def main(argv=None) -> None:
    args = parse_args("fig17", __doc__, argv)
    rows = []
    for model in models(args, "timing"):
        for disc, network in NETWORKS.items():
            for seed in args.seeds:
                egress, skip = {}, 0
                for strategy in ("bsp", "fl-r2sp"):
                    rec = timing(args, seed, strategy, model, network=network)
                    egress[strategy] = load_traces(args, rec)["server-egress"]
                    if strategy == "bsp":
                        skip = int(WARMUP_ROUNDS * rec["summary"]["avg_round_s"] / ENGINE_BIN)
                row = dict(model=model, discipline=disc, seed=seed)
                for width in BINS:
                    b, f = (peak(egress[k][1][skip:], width) for k in ("bsp", "fl-r2sp"))
                    row[f"peak_ratio_{width:g}s"] = ratio(b, f)
                    row[f"bsp_peak_{width:g}s_MBps"] = b / 1e6
                    row[f"flr2sp_peak_{width:g}s_MBps"] = f / 1e6
                rows.append(row)
                if seed == args.seeds[0]:
                    plot(args, model, disc, egress, skip)
    metrics = [k for k in rows[0] if k not in ("model", "discipline", "seed")]
    finish(args, rows, aggregate(rows, ("model", "discipline"), metrics))


if __name__ == "__main__":
    main()

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

from experiments.common import aggregate, finish, load_traces, models, parse_args, say
from experiments.runs import NETWORKS, ratio, timing

BINS = (0.1, 1.0, 5.0)
ENGINE_BIN = 0.1
WARMUP_ROUNDS = 2


def peak(nbytes: np.ndarray, width: float) -> float:
    """Peak rate (bytes/s) after summing 0.1 s bins into bins of ``width`` seconds."""
    k = max(1, int(round(width / ENGINE_BIN)))
    n = len(nbytes) // k * k
    if n == 0:
        return float(np.sum(nbytes) / width)
    return float(np.asarray(nbytes[:n]).reshape(-1, k).sum(axis=1).max() / (k * ENGINE_BIN))


def plot(args, model: str, disc: str, traces: dict) -> None:
    from fl_r2sp.telemetry.plots import plot_trace

    path = args.item_dir / f"egress-{model}-{disc}.png"
    plot_trace(traces, ENGINE_BIN, path, title=f"server egress, {model} ({disc})")
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
                    row[f"bsp_peak_{width:g}s_MBps"], row[f"flr2sp_peak_{width:g}s_MBps"] = b / 1e6, f / 1e6
                rows.append(row)
                if seed == args.seeds[0]:
                    plot(args, model, disc, egress)
    metrics = [k for k in rows[0] if k not in ("model", "discipline", "seed")]
    finish(args, rows, aggregate(rows, ("model", "discipline"), metrics))


if __name__ == "__main__":
    main()

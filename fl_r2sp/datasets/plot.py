"""Per-client label histograms as a stacked bar chart."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np


def plot_label_histograms(
    hist: np.ndarray,
    outlier_ids: Iterable[int],
    path: str | Path,
    title: str = "Label histogram per client",
) -> Path:
    """Save a stacked bar per client (one colour per class) to ``path``.

    Outlier clients get a red, starred tick label. Draws on a bare
    ``matplotlib.figure.Figure`` (Agg canvas), so it needs no display and
    leaves pyplot's global state alone.

    Parameters
    ----------
    hist : np.ndarray
        ``(clients, classes)`` counts, e.g. :meth:`Partition.label_histograms`.
    outlier_ids : iterable of int
        Client ids to mark as outliers.
    path : str or Path
        Output image (``.png``); parent folders are created.
    title : str, default "Label histogram per client"
        Figure title.
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    hist = np.asarray(hist)
    outliers = set(int(o) for o in outlier_ids)
    n, k = hist.shape
    fig = Figure(figsize=(max(6.0, 0.3 * n), 4.0))
    ax = fig.subplots()
    bottom = np.zeros(n)
    cmap = colormaps["tab10" if k <= 10 else "tab20"]
    for c in range(k):
        ax.bar(
            np.arange(n),
            hist[:, c],
            bottom=bottom,
            color=cmap(c % cmap.N),
            label=str(c),
            width=0.85,
        )
        bottom += hist[:, c]
    ax.set_xticks(np.arange(n))
    ax.set_xticklabels(
        [f"{i}*" if i in outliers else str(i) for i in range(n)], fontsize=7, rotation=90
    )
    for i, tick in enumerate(ax.get_xticklabels()):
        if i in outliers:
            tick.set_color("red")
    ax.set_xlabel("client (* = outlier)")
    ax.set_ylabel("samples")
    ax.set_title(title)
    ax.legend(title="class", fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out

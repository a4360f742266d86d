"""The two kinds of run every item is made of, with stable labels (so items share them).

* :func:`timing` — timing-only run at the scale's (paper) size.
* :func:`training` — real SGD run at the scale's (shrunk) size.

Labels name the differences from the scale's defaults, which makes the files
under ``<out>/_runs/`` readable; the cache key is the full config's hash.
"""

from __future__ import annotations

from typing import Any

from experiments.common import Args, cached_run

#: Short names of the two network disciplines (see calibration-paper-ec2.md).
NETWORKS = {"fair": "paper-ec2", "fcfs": "paper-ec2-fcfs"}


def _label(prefix: str, strategy: str, model: str, diff: dict[str, Any]) -> str:
    parts = [prefix, strategy, model]
    parts += [f"{k.replace('_', '')}{v}" for k, v in sorted(diff.items())]
    return "-".join(str(p).replace(".", "p").replace("=", "") for p in parts)


def timing(args: Args, seed: int, strategy: str, model: str, **diff: Any) -> dict[str, Any]:
    """Timing-only run of ``strategy`` on ``model``'s size (``diff``: other knobs)."""
    return cached_run(args, "timing", _label("t", strategy, model, diff), seed,
                      strategy=strategy, model=model, **diff)


def training(args: Args, seed: int, strategy: str, model: str, **diff: Any) -> dict[str, Any]:
    """Real-training run of ``strategy`` on ``model`` (``diff``: other knobs)."""
    return cached_run(args, "training", _label("r", strategy, model, diff), seed,
                      strategy=strategy, model=model, **diff)


def comm(summary: dict[str, Any]) -> float | None:
    """Average communication time per round: pull + push (waits excluded)."""
    pull, push = summary.get("avg_pull_s"), summary.get("avg_push_s")
    return None if pull is None or push is None else pull + push


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, None when either is missing or ``b`` is 0."""
    return None if a is None or not b else a / b

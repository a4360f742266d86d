"""The two kinds of run every item is made of, with stable labels (so items share them).

* :func:`timing` — timing-only run at the scale's (paper) size.
* :func:`training` — real SGD run at the scale's (shrunk) size.

Labels name the differences from the scale's defaults, which makes the files
under ``<out>/_runs/`` readable; the cache key is the full config's hash.
"""

from __future__ import annotations

from typing import Any

from experiments.common.conf import round_units
from experiments.common.run_cache import Args, cached_run, load_jobs

#: Short names of the two network disciplines (see docs/paper-notes.md §4).
NETWORKS = {"fair": "paper-ec2", "fcfs": "paper-ec2-fcfs"}


def _label(prefix: str, strategy: str, model: str, diff: dict[str, Any]) -> str:
    parts = [prefix, strategy, model]
    parts += [f"{k.replace('_', '')}{v}" for k, v in sorted(diff.items())]
    return "-".join(str(p).replace(".", "p").replace("=", "") for p in parts)


#: BSP-round equivalents left out of timing averages: every scheme starts all
#: clients at t = 0 (a BSP-like first round), and FL-R²SP needs a round or two
#: to stagger its groups.
WARMUP_ROUNDS = 2


def timing(args: Args, seed: int, strategy: str, model: str, **diff: Any) -> dict[str, Any]:
    """Timing-only run of ``strategy`` on ``model``'s size (``diff``: other knobs).

    ``rec["summary"]`` is the steady-state summary (see :func:`steady`); the
    whole run's is kept as ``rec["summary_all"]``.
    """
    rec = cached_run(
        args,
        "timing",
        _label("t", strategy, model, diff),
        seed,
        strategy=strategy,
        model=model,
        **diff,
    )
    assert rec is not None  # not cached_only: the run is computed when missing
    rec["summary_all"] = rec["summary"]
    rec["summary"], rec["warmup_s"] = steady(args, rec)
    return rec


def steady(args: Args, rec: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Summary of the jobs dispatched (and records logged) after the warm-up.

    The warm-up is :data:`WARMUP_ROUNDS` / rounds of the run's virtual time
    (rounds = max_updates / updates per round). Trace statistics are kept from
    the whole run (Fig. 17 skips the warm-up itself).
    """
    from fl_r2sp.telemetry.summary import summarize_run

    cfg, whole = rec["config"], rec["summary"]
    unit = round_units(
        cfg["strategy"],
        cfg["num-partitions"],
        whole.get("num_groups") or 1,
        cfg["fraction"],
        cfg["buffer-size"],
    )
    rounds = max(1.0, cfg["max-updates"] / unit)
    skip = whole["virtual_time_s"] * min(WARMUP_ROUNDS, rounds - 1) / rounds
    jobs = [j for j in load_jobs(args, rec) if (j.get("dispatch") or 0.0) >= skip]
    records = [r for r in load_jobs(args, rec, "records") if _rec_time(r) >= skip]
    out = dict(whole)
    out.update({k: v for k, v in summarize_run(jobs, records).items() if v is not None})
    return out, skip


def _rec_time(rec: dict[str, Any]) -> float:
    for key in ("t_release", "t", "time", "t_apply"):
        if rec.get(key) is not None:
            return float(rec[key])
    return 0.0


def training(
    args: Args, seed: int, strategy: str, model: str, cached_only: bool = False, **diff: Any
) -> dict[str, Any] | None:
    """Real-training run of ``strategy`` on ``model`` (``diff``: other knobs).

    ``cached_only=True`` (default False), or ``--skip-training``, returns None
    instead of running.
    """
    return cached_run(
        args,
        "training",
        _label("r", strategy, model, diff),
        seed,
        cached_only=cached_only or args.skip_training,
        strategy=strategy,
        model=model,
        **diff,
    )


def comm(summary: dict[str, Any]) -> float | None:
    """Average communication time per round: pull + push (waits excluded)."""
    pull, push = summary.get("avg_pull_s"), summary.get("avg_push_s")
    return None if pull is None or push is None else pull + push


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, None when either is missing or ``b`` is 0."""
    return None if a is None or not b else a / b

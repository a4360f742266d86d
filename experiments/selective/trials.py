"""Shared setup of the selective-reduce experiments: paper numbers, trials, verdict rules.

These are **simulations** (the paper is simulation-only): :mod:`fl_r2sp.cluster.sim.reduce.engine`
runs the all-reduce-family controllers in virtual time. Nothing is trained.

Setup (the paper's, ``docs/paper-notes.md`` §5.2): n workers, v = 500 MB (10^6 bytes), per-worker
bandwidth round(20u, 3) Gbps with u ~ U[λ, 1], λ = 0.05, α = 1 ms, 100 s of training per trial,
p = 0.3n, η = 0.3, θ = 1; **20 trials** per point (seeds 0–19, the same seeds for every scheme:
same bandwidths and compute draws), reported as min / median / max. Ring all-reduce time from
the analytic formula (the flow-level mode agrees on these disjoint groups, see the tests).

Our choices, fixed before running (the paper gives none of them; not tuned toward any figure):

* Compute times: synthetic proxies of the two traces (:mod:`fl_r2sp.cluster.sim.reduce.workload`:
  CNN narrow ~0.32 s with a slow tail; Transformer broad, right-skewed, ~0.31 s). The real
  traces exist only as CDF figures.
* Δt = 0.1 s; no periodic full sync (c not given); warm start (the trace distribution known in
  advance; the paper's default); the paper's hazard F(t + Δt); the consistent reading of the
  pseudo-code (``docs/paper-notes.md`` §5.4).
* Sensitivity studies (Figs. 8–10, 13, 14) at n = 200 on the Transformer proxy (the paper
  reports the Transformer trace there; n = 200 is inferred from its Fig. 8 text).
* θ grid {1, 2, 5, 10, 20} (the paper: "from 1 to 20", grid not given).
* An extra item of ours, not in the paper: the compute time scaled by {1, 3, 10} at n = 200,
  to show how the ratios depend on the compute/communication balance that the unavailable
  traces fix.

Verdict rules (stated before running):

* A **ratio range** the paper prints ("up to 1.89–2.55×", one end per trace) is a reduction
  (the report's rule, :mod:`experiments.common.verdicts`): the sync time's speed-up as the time
  it saves (1 − 1/x), the scale's and the total iterations' ratio as the share it adds (x − 1).
  Our largest median ratio over n, per trace, so read, is *reproduced* if it has the paper's
  sign and lies in [2/3 of the paper's smaller end, 3/2 of its larger], *same direction* if it
  has the sign but lies outside, else *not reproduced*. Ratios: sync time partial/selective,
  scale selective/partial, total iterations selective/partial (medians over trials).
* **Wasted wait < 0.01 %**: the simulator counts waits still open at the 100 s cutoff as wasted
  (:mod:`fl_r2sp.cluster.policies.reduce.waits`), an upper bound of the paper's meaning, which
  excludes them. The claim *holds* if the largest per-trial upper bound per worker is below
  0.01 % of the 100 s at every n; above it the verdict is *undecided* (the part excluding the
  open waits is not separated by the simulator). Judged separately for the strict "member" and
  the lenient "slot" reading of "wasted".
* A **trend** claim ("grows with n", "decreases with θ", ...): *holds* if the medians along the
  sweep change in the stated direction at every step, with 2 % tolerance against the direction,
  and the last differs from the first in the stated direction.
* A **dominance** claim ("selective beats partial at every x"): *holds* if the median is better
  at every point of the sweep.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import verdicts
from experiments.common.markdown_cells import short
from experiments.common.run_cache import write_csv
from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.sim.reduce.engine import run_reduce_sim
from fl_r2sp.cluster.sim.reduce.result import summarize_trials
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec

N_VALUES = (40, 80, 120, 160, 200)
TRIALS = 20
SCHEMES = ("allreduce", "partial", "selective")
TRACES = ("cnn", "transformer")
SENS_N = 200
DELTA_T = 0.1
#: "up to 1.89-2.55x, 1.19-1.25x, 1.1-1.17x" (sync time, scale, total iterations vs partial).
PAPER_RANGES = {
    "sync_time_s": (1.89, 2.55),
    "scale": (1.19, 1.25),
    "total_iterations": (1.10, 1.17),
}
PAPER_WASTED_PCT = 0.01
METRICS = (
    "sync_time_s",
    "sync_time_wait_s",
    "scale",
    "total_iterations",
    "total_syncs",
    "wasted_wait_s",
    "wasted_wait_pct",
    "wasted_slot_s",
    "wasted_slot_pct",
    "waited_s",
    "wait_decisions",
)
_SOURCES = ("fl_r2sp/cluster/policies/reduce", "fl_r2sp/cluster/sim")


def spec(scheme: str, n: int, seed: int, trace: str = "transformer", **kw: Any) -> ReduceSimSpec:
    """The paper's default trial with the item's differences (``params`` knobs or spec fields)."""
    pkw = {k: kw.pop(k) for k in ("p_fraction", "eta", "theta") if k in kw}
    params = ReduceParams(scheme, delta_t=DELTA_T, **pkw)
    return ReduceSimSpec(params=params, num_workers=n, trace=trace, seed=seed, **kw)


def trials(
    out: Path, scheme: str, n: int, trace: str = "transformer", count: int = TRIALS, **kw: Any
) -> list[dict[str, float]]:
    """Per-trial metrics of ``count`` seeds; cached under ``<out>/_trials`` by config and code."""
    key_src = json.dumps(
        {"scheme": scheme, "n": n, "trace": trace, "count": count, **kw, "code": _code_hash()},
        sort_keys=True,
    )
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    path = out / "_trials" / f"{scheme}-n{n}-{trace}-{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    rows = [run_reduce_sim(spec(scheme, n, s, trace, **dict(kw))).metrics() for s in range(count)]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows))
    tmp.replace(path)
    return rows


def spread_row(rows: Sequence[Mapping[str, float]], **labels: Any) -> dict[str, Any]:
    """``labels`` plus ``<metric>_min/_median/_max`` over the trials."""
    out: dict[str, Any] = dict(labels, trials=len(rows))
    for metric, s in summarize_trials(rows, METRICS).items():
        for stat in ("min", "median", "max"):
            out[f"{metric}_{stat}"] = s[stat]
    return out


def median(rows: Iterable[Mapping[str, Any]], metric: str, **match: Any) -> float:
    """The ``<metric>_median`` of the one row matching ``match``."""
    hits = [r for r in rows if all(r[k] == v for k, v in match.items())]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} rows match {match}")
    return float(hits[0][f"{metric}_median"])


def as_reduction(metric: str, ratio: float) -> float | None:
    """Selective's improvement ratio over partial reduce (> 1: better) as a reduction: the sync
    time's speed-up as the time it saves (1 − 1/x), the others' as the share they add (x − 1)."""
    return verdicts.reduction_of_speedup(ratio) if metric == "sync_time_s" else ratio - 1


def range_verdict(metric: str, ours: float, low: float, high: float) -> str:
    """The ratio-range rule of the module docstring (reductions, :mod:`..common.verdicts`)."""
    if not math.isfinite(ours):
        return "n/a"
    lo, hi = as_reduction(metric, low), as_reduction(metric, high)
    if lo is None or hi is None:
        return "n/a"
    return verdicts.reduction_range_label(as_reduction(metric, ours), lo, hi)


def trend(values: Sequence[float], direction: str, tol: float = 0.02) -> bool:
    """True if ``values`` move in ``direction`` ("up"/"down") step by step (2 % tolerance)."""
    sign = 1.0 if direction == "up" else -1.0
    steps = all(sign * (b - a) >= -tol * abs(a) for a, b in zip(values, values[1:], strict=False))
    return steps and sign * (values[-1] - values[0]) > 0


def claim(holds: bool) -> str:
    """Verdict of a claim without numbers."""
    return "holds" if holds else "does not hold"


def bound_claim(bound_holds: bool) -> str:
    """Verdict of a claim judged on an upper bound: it holds if the bound does, else undecided."""
    return "holds" if bound_holds else "undecided"


def write_item(
    out: Path, item: str, rows: Sequence[Mapping[str, Any]], claims: Sequence[Mapping[str, Any]]
) -> Path:
    """``<out>/<item>/runs.csv`` (min/median/max rows) and ``claims.csv``; print the claims."""
    d = out / item
    write_csv(d / "runs.csv", rows)
    write_csv(d / "claims.csv", claims)
    print(f"== {item}")
    for row in claims:
        print("  " + " | ".join(f"{k}={short(v)}" for k, v in row.items()))
    return d


def panels(
    path: Path,
    rows: Sequence[Mapping[str, Any]],
    x: str,
    metrics: Sequence[str],
    series: Callable[[Mapping[str, Any]], str],
    xlabel: str,
    title: str,
) -> Path:
    """One panel per metric: median per series vs ``x``, min-max as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4))
    names = sorted({series(r) for r in rows})
    for ax, metric in zip(np.atleast_1d(axes), metrics, strict=True):
        for name in names:
            pts = sorted(
                (r[x], r[f"{metric}_min"], r[f"{metric}_median"], r[f"{metric}_max"])
                for r in rows
                if series(r) == name
            )
            xs, lo, mid, hi = (np.array(v, dtype=float) for v in zip(*pts, strict=True))
            ax.errorbar(xs, mid, yerr=[mid - lo, hi - mid], marker="o", capsize=3, label=name)
        ax.set_xlabel(xlabel)
        ax.set_title(metric)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@functools.cache
def _code_hash() -> str:
    """Hash of the simulator's code without docstrings (doc edits keep the cached trials)."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for folder in _SOURCES:
        for f in sorted((root / folder).rglob("*.py")):
            if "reduce" in f.as_posix():
                h.update(ast.dump(_strip_docstrings(ast.parse(f.read_text()))).encode())
    return h.hexdigest()[:12]


def _strip_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body[0] = ast.Pass()
    return tree

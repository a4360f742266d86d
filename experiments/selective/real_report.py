"""The record of the selective-reduce real runs as Markdown: aggregates, ratios, verdicts.

Reads the rows :mod:`experiments.selective.real` writes (one per seed and scheme, computed from
the run directories) and renders, with no figure typed in:

* one row per scheme: the mean and the range over the seeds of each metric of :data:`METRICS`;
* the ratios of selective reduce against partial and all reduce (and of partial against all
  reduce): the ratio of the means over the seeds both schemes ran, and each seed's ratio;
* the verdicts where the paper states a claim (:data:`CLAIMS`), by the simulation's Figs. 5-6
  rule (:func:`experiments.selective.trials.as_reduction`, the report's rules of
  :mod:`experiments.common.verdicts`), and the claims that do not apply to these runs.

Used for ``records/report/selective_real/REPORT.md`` and for REPORT.md's section "Cluster mode:
selective reduce in the real runtime (CPU)" (:func:`real_lines`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.common import verdicts
from experiments.selective.trials import PAPER_RANGES, as_reduction

__all__ = [
    "CLAIMS",
    "COMPARISONS",
    "HEADING",
    "METRICS",
    "aggregate",
    "claim_verdict",
    "provenance_line",
    "ratio",
    "ratio_lines",
    "real_lines",
    "report",
    "scale_line",
    "table_lines",
]

#: REPORT.md's section of these runs (the generated block ``selective-real`` quotes it).
HEADING = "Cluster mode: selective reduce in the real runtime (CPU)"
SCHEMES = ("allreduce", "partial", "selective")
#: Row metrics shown per scheme (mean and range over the seeds), with their decimals.
METRICS: Mapping[str, int] = {
    "sync_s": 3,
    "wait_s": 3,
    "scale": 2,
    "syncs": 1,
    "iterations": 1,
    "wall_s": 2,
    "it_per_s": 2,
    "final_loss": 3,
    "t_target_s": 2,
}
#: (what, metric, numerator scheme, denominator scheme): > 1 means the numerator's value is
#: larger (sync and target times: the denominator is faster; scale, rate: the numerator larger).
COMPARISONS: tuple[tuple[str, str, str, str], ...] = (
    ("sync time, partial / selective", "sync_s", "partial", "selective"),
    ("sync time, all reduce / selective", "sync_s", "allreduce", "selective"),
    ("sync time, all reduce / partial", "sync_s", "allreduce", "partial"),
    ("scale, selective / partial", "scale", "selective", "partial"),
    ("iterations per second, selective / partial", "it_per_s", "selective", "partial"),
    ("iterations per second, selective / all reduce", "it_per_s", "selective", "allreduce"),
    ("s to loss target, partial / selective", "t_target_s", "partial", "selective"),
    ("s to loss target, all reduce / selective", "t_target_s", "allreduce", "selective"),
)
#: Comparison -> the paper's range it is judged against (a key of PAPER_RANGES). Iterations per
#: second stand for the paper's total iterations in a fixed 100 s (ours: a fixed budget).
CLAIMS: Mapping[str, str] = {
    "sync time, partial / selective": "sync_time_s",
    "scale, selective / partial": "scale",
    "iterations per second, selective / partial": "total_iterations",
}

Row = Mapping[str, Any]


def _ok(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.get("sync_s") is not None]


def aggregate(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per scheme (in :data:`SCHEMES` order, those with a usable run): mean, range, values.

    Parameters
    ----------
    rows : sequence of mapping
        Result rows (``seed``, ``scheme`` and the :data:`METRICS`); rows without ``sync_s``
        (runs without a summary) are left out.

    Returns
    -------
    list of dict
        ``{"scheme", "seeds", <metric>: {"mean", "lo", "hi", "values", "n"}}`` per scheme;
        ``values`` holds each seed's value in seed order (None where missing, e.g. a loss
        target never reached), ``mean``/``lo``/``hi`` are over the present values (None if
        none), ``n`` counts them.
    """
    out = []
    for scheme in SCHEMES:
        rs = sorted((r for r in _ok(rows) if r["scheme"] == scheme), key=lambda r: r["seed"])
        if not rs:
            continue
        entry: dict[str, Any] = {"scheme": scheme, "seeds": [r["seed"] for r in rs]}
        for metric in METRICS:
            values = [None if r.get(metric) is None else float(r[metric]) for r in rs]
            present = [v for v in values if v is not None]
            entry[metric] = {
                "mean": math.fsum(present) / len(present) if present else None,
                "lo": min(present, default=None),
                "hi": max(present, default=None),
                "values": values,
                "n": len(present),
            }
        out.append(entry)
    return out


def ratio(rows: Sequence[Row], metric: str, num: str, den: str) -> tuple[float | None, list[float]]:
    """``num``'s ``metric`` over ``den``'s, on the seeds where both have a value.

    Parameters
    ----------
    rows : sequence of mapping
        Result rows.
    metric : str
        A key of :data:`METRICS`.
    num, den : str
        Schemes of the numerator and the denominator.

    Returns
    -------
    tuple
        (ratio of the means over the paired seeds, or None without a pair or with a zero
        denominator; each paired seed's ratio, in seed order).
    """
    by = {(r["scheme"], r["seed"]): float(r[metric]) for r in _ok(rows)
          if r.get(metric) is not None}  # fmt: skip
    seeds = sorted({s for (scheme, s) in by if scheme == num and (den, s) in by})
    pairs = [(by[(num, s)], by[(den, s)]) for s in seeds]
    per_seed = [a / b for a, b in pairs if b]
    den_sum = math.fsum(b for _, b in pairs)
    if not pairs or not den_sum:
        return None, per_seed
    return math.fsum(a for a, _ in pairs) / den_sum, per_seed


def claim_verdict(what: str, ours: float | None, seeds: int) -> str:
    """The verdict of comparison ``what`` against the paper's range (``no paper claim`` when
    :data:`CLAIMS` has none): the range rule of :mod:`experiments.selective.trials` on a
    reduction; ``n/a`` when ours is missing."""
    key = CLAIMS.get(what)
    if key is None:
        return "no paper claim"
    if ours is None:
        return "n/a"
    low, high = PAPER_RANGES[key]
    lo, hi, mine = as_reduction(key, low), as_reduction(key, high), as_reduction(key, ours)
    if lo is None or hi is None:
        return "n/a"
    return verdicts.reduction_range_label(mine, lo, hi, seeds=seeds)


def _fmt(x: float | None, digits: int) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def table_lines(rows: Sequence[Row]) -> list[str]:
    """One Markdown row per scheme: each metric's mean (range) over the seeds; a metric that
    some seed lacks (a target not reached) says how many seeds have it."""
    head = ["scheme", "seeds", *METRICS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in aggregate(rows):
        cells = [a["scheme"], ", ".join(str(s) for s in a["seeds"])]
        for metric, digits in METRICS.items():
            m = a[metric]
            text = f"{_fmt(m['mean'], digits)} ({_fmt(m['lo'], digits)}-{_fmt(m['hi'], digits)})"
            if not m["n"]:
                text = "none"
            missing = len(m["values"]) - m["n"]
            cells.append(text + (f", {m['n']} of {len(m['values'])} seeds" if missing else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def per_seed_lines(rows: Sequence[Row]) -> list[str]:
    """Per seed and scheme: sync time, scale, wall time and time to the loss target."""
    shown = ("sync_s", "scale", "wall_s", "t_target_s")
    lines = ["| seed | scheme | " + " | ".join(shown) + " |", "|" + "---|" * (2 + len(shown))]
    for r in sorted(_ok(rows), key=lambda r: (r["seed"], SCHEMES.index(r["scheme"]))):
        cells = [str(r["seed"]), r["scheme"]]
        cells += [_fmt(None if r.get(m) is None else float(r[m]), METRICS[m]) for m in shown]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ratio_lines(rows: Sequence[Row]) -> tuple[list[str], list[str]]:
    """The ratio table (ours, each seed's, the paper's range, verdict) and the verdict words of
    the comparisons the paper states a claim for, in :data:`COMPARISONS` order."""
    lines = [
        "| ratio | ours: of the means (per seed) | paper, up to (n = 40-200) | verdict |",
        "|---|---|---|---|",
    ]
    words = []
    for what, metric, num, den in COMPARISONS:
        ours, per_seed = ratio(rows, metric, num, den)
        verdict = claim_verdict(what, ours, len(per_seed))
        key = CLAIMS.get(what)
        paper = "–" if key is None else "{:.2f}-{:.2f}x".format(*PAPER_RANGES[key])
        seeds = ", ".join(f"{x:.2f}" for x in per_seed)
        mine = "n/a" if ours is None else f"{ours:.2f}x ({seeds})"
        lines.append(f"| {what} | {mine} | {paper} | {verdict} |")
        if key is not None:
            words.append(f"{what}: " + ("n/a" if ours is None else f"{ours:.2f}x, {verdict}"))
    return lines, words


def scale_line(args: Mapping[str, Any], rows: Sequence[Row]) -> str:
    """What ran (from the record's arguments and rows) and the paper's setting beside it."""
    params = next((int(r["parameters"]) for r in rows if r.get("parameters")), 0)
    caps = {r["seed"]: r.get("caps", "") for r in _ok(rows)}
    seeds = ", ".join(str(s) for s in args["seeds"])
    delays = [float(d) for d in args["delays"]]
    return (
        f"Scale: {args['workers']} worker processes (gloo, CPU) on one machine, mlp-wide "
        f"({params / 1e6:.2f} M parameters, {4 * params / 1e6:.1f} MB) on the synthetic set, "
        f"{args['rounds']} rounds per worker (a budget of {args['workers'] * args['rounds']} "
        f"worker rounds per scheme), emulated compute {min(delays):.2f}-{max(delays):.2f} s "
        f"per round, links capped at round({args['max_mb_s']:g}u, 3) MB/s with u ~ "
        f"U[{args['bw_lambda']:g}, 1] (per seed: "
        + "; ".join(f"{s}: {c}" for s, c in sorted(caps.items()))
        + f"), p = {args['p']} (max(2, round(0.3n))), η = 0.3, θ = 1, Δt = 0.1 s, "
        f"{args['estimate']} bandwidths, "
        f"loss target {args['target']:g}, seeds {seeds}. Paper: simulated only, n = 40-200 "
        "workers, a 500 MB model, round(20u, 3) Gbps links with u ~ U[0.05, 1], p = 0.3n, "
        "compute from two traces, 100 s of training per trial, 20 trials."
    )


def provenance_line(prov: Mapping[str, Any]) -> str:
    """Which commit made the runs and whether its tree was clean (a dirty tree: said plainly)."""
    commit = prov.get("git_commit")
    how = "rescored from kept run folders; " if prov.get("rescored") else ""
    if not commit:
        return f"Provenance: {how}no git commit known: the record stands for no commit."
    if prov.get("git_dirty"):
        state = "**with uncommitted edits**: the record does not stand for that commit alone"
    else:
        state = "clean tree"
    return (
        f"Provenance: {how}runs made by commit {str(commit)[:10]} ({state}), engine code "
        f"version `{prov.get('code_version')}`, {prov.get('run_seconds', 0):.0f} s of runs."
    )


def rule_lines() -> list[str]:
    """The verdict rule and the paper's claims that do not apply to these runs."""
    lo, hi = verdicts.BAND
    return [
        "Verdict rule (the simulation's Figs. 5-6 rule, `experiments/common/verdicts.py`): a "
        'ratio the paper states as a range ("up to 1.89-2.55x") is read as a reduction (sync '
        "time: the time it saves, 1 - 1/x; scale and iterations: the share they add, x - 1); "
        f"ours, the ratio of the means over the seeds, is *reproduced* with the paper's sign "
        f"and within [{lo:.2f} x the range's smaller end, {hi:.2f} x its larger], *same "
        "direction* with the sign outside that, else *not reproduced*. The paper's ranges are "
        "its largest ratios over n = 40-200 at 500 MB; ours is one n = 8 on CPU loopback, so a "
        "ratio outside the range describes these runs, not the paper's maximum. Iterations per "
        "second stand for the paper's total iterations in 100 s (ours run a fixed budget of "
        "worker rounds, so the rate is what differs).",
        "",
        "No paper claim applies to the other rows: the paper gives no number against all "
        "reduce, and trains nothing (time to a loss target, final loss); nor to its trends in "
        "n, its sensitivity sweeps (p, η, θ, λ, α) or its wasted-wait bound (< 0.01 %): these "
        "runs have one n, one setting, and do not separate wasted waits.",
    ]


def body_lines(data: Mapping[str, Any]) -> list[str]:
    """Scale, the tables, verdicts, rule and provenance of a record (``results.json``)."""
    rows, args = data["rows"], data["args"]
    ratios, words = ratio_lines(rows)
    bad = [f"seed {r['seed']} {r['scheme']}: {r['status']}" for r in rows
           if r.get("status") != "ok"]  # fmt: skip
    return [
        scale_line(args, rows),
        "",
        "Per scheme, mean (range) over the seeds (columns: `python -m "
        "experiments.selective.real --help`):",
        "",
        *table_lines(rows),
        "",
        *ratios,
        "",
        "Verdicts: " + ("; ".join(words) if words else "none (no usable pair of runs)") + ".",
        "",
        *rule_lines(),
        "",
        *(["Runs not ok: " + "; ".join(bad) + ".", ""] if bad else []),
        "Per seed:",
        "",
        *per_seed_lines(rows),
        "",
        provenance_line(data.get("provenance", {})),
    ]


def report(data: Mapping[str, Any]) -> str:
    """``records/report/selective_real/REPORT.md`` of the record ``data`` (``results.json``)."""
    return "\n".join(
        [
            "# Selective reduce against partial and all reduce: real CPU runs",
            "",
            "Command: `python -m experiments.selective.real` (its docstring defines every "
            "column). REPORT.md quotes this record in its section "
            f"\u201c{HEADING}\u201d.",
            "",
            *body_lines(data),
            "",
        ]
    )


def real_lines(root: Path) -> list[str]:
    """REPORT.md's section of the real runs; ``root`` holds ``selective_real/results.json``
    (``records/report``); without it, the command that makes it."""
    lines = [f"## {HEADING}", ""]
    path = root / "selective_real" / "results.json"
    if not path.exists():
        return [*lines, "Not run yet: `python -m experiments.selective.real --seeds 0,1,2` "
                "writes `records/report/selective_real/`.", ""]  # fmt: skip
    return [
        *lines,
        "All reduce, partial reduce and selective reduce trained for real on this machine "
        "(the controllers of the simulations above, on the decentralised runtime "
        "`fl_r2sp/cluster/runtime/reduce/`); the record is "
        "[records/report/selective_real/](records/report/selective_real/REPORT.md), made by "
        "`python -m experiments.selective.real`.",
        "",
        *body_lines(json.loads(path.read_text())),
        "",
    ]

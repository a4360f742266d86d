"""Hostile clients against the group aggregate: accuracy and false blacklisting.

Attackers are a client-side run-config knob (``attack``, ``fl_r2sp/fl/clients/attacks.py``),
the same in-process and under Flower: ``sign-flip`` (delta negated), ``scale(1000)`` (delta
x1000) and ``huge(1e30)`` (every weight 1e30), run by 0, 1 or 25% of the clients (a seeded
draw). Each is met by every aggregation option, all behind update admission
(``fl_r2sp/fl/server/admission.py``, default knobs: 10 x the median delta norm):

* ``mean``, ``median``, ``trimmed-mean``, ``krum``: the intra-group aggregate, cosine filter off;
* ``filter+mean``: the paper's setting, mean with the cosine outlier filter (the paper's rule);
* ``mean-no-norm``: mean without the norm check (``admission-norm-factor = 0``), to show
  what the bound buys (non-finite updates are still refused).

Setting (``laptop``): FL-R²SP, sklearn digits MLP, 16 clients in 2 groups of 8
(C = 0.75: 6 collected per round), Dirichlet alpha 10 with no natural outliers, so every
blacklisted honest client is a false positive; tau 10, 40 global updates, virtual time.
Krum assumes f = ceil(attackers / groups) and the trimmed mean cuts
max(0.2, (f + 0.05) / 6) of each tail: each option is told how many attackers to expect.

Per run: final accuracy, status (a run that lost more than ``max-lost-share`` of its
clients or ends non-finite counts as failed), updates rejected by admission, attackers
dropped or blacklisted, honest clients blacklisted (false blacklisting) or dropped.
Outputs in ``<out>/robustness/``: ``runs.csv``, ``summary.csv`` / ``summary.json`` (mean
over seeds) and ``table.md`` (accuracy and false blacklisting per attack and option).
Runs are cached under ``<out>/robustness/_runs`` (key: configuration and code version).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.common import eta, provenance
from experiments.common.conf import PAPER_FILTER
from experiments.common.run_cache import (
    Args,
    aggregate,
    config_key,
    finish,
    parse_args,
    say,
)
from fl_r2sp.telemetry.rundir import atomic_write_bytes

#: Per scale: clients, groups, local iterations, global updates, evaluation interval.
SIZES: dict[str, dict[str, Any]] = {
    "smoke": dict(num_partitions=8, num_groups=2, local_iterations=5, max_updates=8, eval_every=4),
    "laptop": dict(
        num_partitions=16, num_groups=2, local_iterations=10, max_updates=40, eval_every=10
    ),
    "paper": dict(
        num_partitions=32, num_groups=4, local_iterations=20, max_updates=80, eval_every=20
    ),
}
ATTACKS = ("sign-flip", "scale(1000)", "huge(1e30)")
OPTIONS: dict[str, dict[str, Any]] = {
    "mean": dict(aggregation="mean", outlier_filter=False),
    "median": dict(aggregation="median", outlier_filter=False),
    "trimmed-mean": dict(aggregation="trimmed-mean", outlier_filter=False),
    "krum": dict(aggregation="krum", outlier_filter=False),
    "filter+mean": dict(aggregation="mean", outlier_filter=True),
    "mean-no-norm": dict(aggregation="mean", outlier_filter=False, admission_norm_factor=0.0),
}
METRICS = (
    "final_accuracy",
    "failed",
    "rejected",
    "attackers_dropped",
    "attackers_blacklisted",
    "false_blacklisted",
    "honest_dropped",
)


def scenarios(num_clients: int) -> list[tuple[str, int]]:
    """(attack, attacker count): the clean run, then each attack by 1 and by 25% of the clients."""
    quarter = max(1, num_clients // 4)
    return [("none", 0)] + [(a, n) for a in ATTACKS for n in (1, quarter)]


def config(scale: str, seed: int, attack: str, count: int, option: str):
    """The RunConfig of one cell (see the module docstring for the setting)."""
    from fl_r2sp.fl.config import RunConfig
    from fl_r2sp.fl.policies.groups import fraction_need

    size = SIZES[scale]
    groups = size["num_groups"]
    collected = fraction_need(0.75, size["num_partitions"] // groups)
    f = min(math.ceil(count / groups), max(0, collected - 3))  # keeps n - f - 2 >= 1
    return RunConfig(
        strategy="fl-r2sp",
        dataset="digits",
        partitioner="dirichlet",
        alpha=10.0,
        fraction=0.75,
        seed=seed,
        plots=False,
        **size,
        # The paper's rule under every option (the engine default is `relative`): the filter
        # options keep meaning the paper's filter, the others their logged streaks.
        **{**PAPER_FILTER, **OPTIONS[option]},
        attack=attack,
        attack_fraction=count / size["num_partitions"],
        krum_malicious=f,
        trim_beta=min(0.45, max(0.2, (f + 0.05) / collected)),
    )


def outcome(cfg, out: Any, failure: str | None) -> dict[str, Any]:
    """The metrics of one finished run (``out`` is its RunOutput)."""
    from fl_r2sp.fl.clients.attacks import AttackPlan

    attackers = AttackPlan.of(
        cfg.attack, cfg.attack_fraction, cfg.seed, cfg.num_partitions
    ).attackers()
    s = out.summary
    banned = {int(r["cid"]) for r in out.events.of_kind("blacklist")}
    dropped = {int(c) for c in s.get("policy_dropped") or []}
    return dict(
        final_accuracy=s.get("final_accuracy"),
        failed=int(failure is not None),
        failure=failure or "",
        attackers=" ".join(map(str, sorted(attackers))),
        rejected=sum(s.get("updates_rejected", {}).values()),
        rejected_by=json.dumps(s.get("updates_rejected", {}), sort_keys=True),
        attackers_dropped=len(dropped & attackers),
        attackers_blacklisted=len(banned & attackers),
        false_blacklisted=len(banned - attackers),
        honest_dropped=len(dropped - attackers),
        global_updates=s.get("global_updates"),
    )


def run_cell(args: Args, seed: int, attack: str, count: int, option: str) -> dict[str, Any]:
    """Run (or load from the cache) one cell; return its row."""
    from fl_r2sp.fl.server.admission import RunFailed
    from fl_r2sp.fl.server.runner import run

    cfg = config(args.scale, seed, attack, count, option)
    label = f"{option}-{attack}-{count}".replace("(", "").replace(")", "")
    runs = args.item_dir / "_runs"
    ckey = config_key(cfg)
    path = runs / f"{label}-s{seed}-{provenance.run_key(ckey, provenance.code_version())}.json"
    head = dict(attack=attack, attackers_n=count, option=option, seed=seed)
    for version in provenance.current_versions():  # the current code under any of its names
        done = runs / f"{label}-s{seed}-{provenance.run_key(ckey, version)}.json"
        if done.exists():
            say(f"robustness: {eta.count()} {label} seed {seed}: cached")
            cached = json.loads(done.read_text())
            provenance.note_used({**cached, "label": label, "seed": seed})
            return {**head, **cached}
    started = time.perf_counter()
    try:
        out, failure = run(cfg, write=False, progress=False), None
    except RunFailed as exc:  # the run finished but counts as failed: keep its numbers
        out, failure = exc.output, exc.reason
    took = time.perf_counter() - started
    # Stamped like every cached run (code version, commit, when), so the record says which
    # committed code made each cell.
    row = provenance.stamp(outcome(cfg, out, failure), ckey, took)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(row).encode())
    provenance.note_used({**row, "label": label, "seed": seed})
    say(
        f"robustness: {eta.count(took)} {label} seed {seed}: acc {row['final_accuracy']:.3f}, "
        f"rejected {row['rejected']}, false blacklisted {row['false_blacklisted']}"
        f"{', FAILED: ' + failure if failure else ''} ({took:.1f} s)"
    )
    return {**head, **row}


def table_md(table: Sequence[Mapping[str, Any]]) -> str:
    """Markdown table: one row per (attack, attackers), one column per option.

    A cell is ``accuracy / false blacklisted``, with ``failed`` when any seed's run failed.
    """
    cells = {(r["attack"], r["attackers_n"], r["option"]): r for r in table}
    rows = sorted({(a, n) for a, n, _ in cells}, key=lambda k: (k[0] != "none", k))
    lines = [
        "| attack | attackers | " + " | ".join(OPTIONS) + " |",
        "|---|---|" + "---|" * len(OPTIONS),
    ]
    for attack, n in rows:
        out = []
        for option in OPTIONS:
            r = cells.get((attack, n, option))
            if r is None:
                out.append("")
                continue
            acc, fb = r["final_accuracy_mean"], r["false_blacklisted_mean"]
            text = f"{acc:.3f} / {fb:.1f}" if acc is not None else "n/a"
            out.append(text + (" failed" if r["failed_mean"] else ""))
        lines.append(f"| {attack} | {n} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("robustness", __doc__, argv)
    cells = len(scenarios(SIZES[args.scale]["num_partitions"])) * len(OPTIONS)
    eta.plan(cells * len(args.seeds))
    rows = [
        run_cell(args, seed, attack, count, option)
        for attack, count in scenarios(SIZES[args.scale]["num_partitions"])
        for option in OPTIONS
        for seed in args.seeds
    ]
    table = aggregate(rows, ("attack", "attackers_n", "option"), METRICS)
    md = table_md(table)
    Path(args.item_dir / "table.md").write_text(
        "accuracy / honest clients blacklisted (mean over seeds "
        + ",".join(map(str, args.seeds))
        + f"; scale {args.scale})\n\n"
        + md
    )
    finish(args, rows, table, {"table_md": md})
    print(md)


if __name__ == "__main__":
    main()

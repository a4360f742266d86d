"""Soak benchmark: many real SuperNodes on loopback, steady and then with churn.

    .venv/bin/python benchmarks/bench_soak.py --nodes 32 --minutes 10

Two phases, each a fresh deployment by ``scripts/chaos.py`` (one ``flower-superlink``,
``--nodes`` ``flower-supernode`` processes, wall clock, FL-R²SP with ``--groups`` groups at
C = ``--fraction``, honest clients, a time budget of ``--minutes``):

* ``steady``: no node is touched;
* ``churn``: 10% of the nodes (at least one) are killed and restarted with the same
  partition id, spread over the phase (a quarter of the kills SIGKILL, the rest SIGTERM).

In both phases chaos.py restarts a SuperNode the ServerApp reports silent twice in a row (a
wedged SuperNode: its partition queries unanswered, 120 s each), an operator's action counted
apart from the kills. Each phase keeps the app's own health bounds (``max-lost-share``,
``max-rejected-share`` at their defaults, over chaos.py's hostile-run values). Reported per
phase, from the run folder and chaos.py's output: status, global updates, the ledger
(accepted, rejected, dropped, in flight at the stop), the longest gap between global updates,
peak memory per node (the SuperNode with its ClientApps), what was lost (clients dropped,
partitions that never had an update accepted), the restarts and the load average (1 min) at
the phase's start and end. ``--out`` also writes the figures as JSON; each phase's whole
output and run folder stay in a temporary folder the script names.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The line chaos.py prints about memory (MemoryWatch.line).
MEMORY = re.compile(r"memory per node .*: median (\d+) MiB, largest (\d+) MiB")
#: The run's final status at the SuperLink as chaos.py reports it (RunEnd.describe).
LINK_STATUS = re.compile(r"status (.+?) at the SuperLink")
#: chaos.py's count of SuperNodes restarted as silent (wedged).
SILENT_RESTARTS = re.compile(r"(\d+) silent nodes restarted")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=32, help="SuperNodes (default: 32)")
    p.add_argument("--groups", type=int, default=8, help="FL-R²SP groups M (default: 8)")
    p.add_argument("--fraction", type=float, default=0.75, help="C (default: 0.75)")
    p.add_argument("--minutes", type=float, default=10.0, help="training time per phase")
    p.add_argument("--churn-share", type=float, default=0.1, help="share of nodes killed")
    p.add_argument("--phases", default="steady,churn", help="which phases, comma-separated")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    return p.parse_args(argv)


def chaos_cmd(args: argparse.Namespace, phase: str, runs: Path) -> list[str]:
    """The chaos.py command line of one phase."""
    seconds = args.minutes * 60.0
    kills = max(1, round(args.churn_share * args.nodes)) if phase == "churn" else 0
    return [
        sys.executable,
        str(ROOT / "scripts" / "chaos.py"),
        *("--num-supernodes", str(args.nodes), "--groups", str(args.groups)),
        *("--fraction", str(args.fraction), "--duration", str(seconds), "--seed", str(args.seed)),
        *("--attack", "none", "--run-dir", str(runs), "--timeout", "0"),
        # No kill in the steady phase (the first would come after the run); in the churn
        # phase the kills spread over the phase.
        *("--kills", str(kills), "--kill-every", str(seconds / (kills + 1) if kills else 1e9)),
        *("--down", "10", "--sigkill-share", "0.25"),
        # The app's health bounds over chaos.py's; 32 nodes start slowly on a busy machine.
        *("--run-config", "max-lost-share=0.5 max-rejected-share=0.5 node-wait=900 node-grace=120"),
    ]


def figures(runs: Path, output: str) -> dict[str, Any]:
    """The phase's figures from its run folder and chaos.py's output."""
    folders = [p for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    if len(folders) != 1:  # the ServerApp failed before its run began (see the log)
        memory = MEMORY.search(output)
        return {
            "error": f"expected one run folder in {runs}, found {len(folders)}",
            "memory_mib_median": int(memory.group(1)) if memory else None,
        }
    summary = json.loads((folders[0] / "summary.json").read_text())["summary"]
    ledger = folders[0] / "jobs.csv"  # absent if the run failed before training
    jobs = list(csv.DictReader(ledger.read_text().splitlines())) if ledger.exists() else []
    accepted = {int(j["cid"]) for j in jobs if j["push_end"] and not j["failed"]}
    partitions = {int(j["cid"]) for j in jobs}
    memory = MEMORY.search(output)
    keys = ("status", "failure", "global_updates", "updates_accepted", "updates_rejected")
    keys += ("jobs_dropped", "jobs_in_flight", "longest_update_gap", "clients_lost")
    return {
        **{k: summary.get(k) for k in keys},
        "job_rows": len(jobs),
        "partitions_without_accepted_update": sorted(partitions - accepted),
        "memory_mib_median": int(memory.group(1)) if memory else None,
        "memory_mib_largest": int(memory.group(2)) if memory else None,
        "kills": re.findall(r"chaos: (\d+) kills, (\d+) restarts", output),
        "silent_restarts": int(m.group(1)) if (m := SILENT_RESTARTS.search(output)) else None,
        "superlink_status": link.group(1) if (link := LINK_STATUS.search(output)) else None,
    }


def run_phase(args: argparse.Namespace, phase: str, logs: Path) -> dict[str, Any]:
    """Run one phase; its figures (and chaos.py's exit status). Its whole output goes to
    ``logs/<phase>.log``, its run folder under ``logs/<phase>-runs``."""
    runs = logs / f"{phase}-runs"
    cmd = chaos_cmd(args, phase, runs)
    print("$", " ".join(cmd), flush=True)
    load = os.getloadavg()[0]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    out = res.stdout + res.stderr
    (logs / f"{phase}.log").write_text(out)
    print("\n".join(line for line in out.splitlines() if line.startswith("chaos")), flush=True)
    loads = {"load_start": round(load, 1), "load_end": round(os.getloadavg()[0], 1)}
    return {"phase": phase, "chaos_exit": res.returncode, **loads, **figures(runs, out)}


def main(argv: list[str] | None = None) -> int:
    """Run the phases and print their figures; 0 if every phase completed."""
    args = parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="soak-"))
    print(f"soak: output and run folders in {logs}", flush=True)
    results = [run_phase(args, phase, logs) for phase in args.phases.split(",")]
    for r in results:
        if "error" in r:
            print(f"soak {r['phase']}: {r['error']} (see {logs / r['phase']}.log)")
            continue
        gap = r.get("longest_update_gap")
        print(
            f"soak {r['phase']}: status {r.get('status')} ({r.get('failure')}; at the "
            f"SuperLink: {r.get('superlink_status')}); "
            f"{r.get('global_updates')} global updates; ledger accepted "
            f"{r.get('updates_accepted')}, rejected {r.get('updates_rejected')}, dropped "
            f"{r.get('jobs_dropped')}, in flight {r.get('jobs_in_flight')} of "
            f"{r.get('job_rows')} jobs; longest gap "
            f"{gap if gap is None or not math.isfinite(gap) else round(gap, 1)} s; memory per "
            f"node median {r.get('memory_mib_median')} MiB, largest {r.get('memory_mib_largest')}"
            f" MiB; lost clients {r.get('clients_lost')}, partitions without an accepted "
            f"update {r.get('partitions_without_accepted_update')}; kills/restarts {r['kills']}, "
            f"silent nodes restarted {r['silent_restarts']}; load {r['load_start']} -> "
            f"{r['load_end']}"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r.get("status") == "completed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

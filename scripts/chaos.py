#!/usr/bin/env python
"""A bounded chaos run on loopback: SuperNodes killed and restarted, hostile updates.

One SuperLink and N SuperNodes as in ``scripts/deploy_local.py`` (insecure,
loopback, temporary ``FLWR_HOME``); the app runs on the wall clock with
hostile clients from the ``attack`` knob (default: a 1e30 client, a x1000
client, one claiming ``num-examples = -5`` and a sign flipper). While it runs,
a seeded schedule kills a random live SuperNode every ``--kill-every``
seconds (SIGTERM, which deactivates the node at the SuperLink at once, or
SIGKILL, which the SuperLink notices only when the heartbeat expires, 36-60 s)
and restarts it ``--down`` seconds later with the same ``partition-id`` (a new
node id: the server must re-attach it). At most one node per group is down at
a time, so every group keeps members.

At the end it prints the ledger from the run's ``summary.json`` (accepted,
rejected by reason, dropped by reason), the liveness records (re-attached
clients, empty groups) and the gaps between global updates, and checks that
none is longer than 2x the median group round time ("stalled"). Exit code:
0 if the run completed with no stalled gap, 1 otherwise, 124 on ``--timeout``.

Usage::

    python scripts/chaos.py --num-supernodes 8 --duration 120 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent):  # run as a script from a checkout
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import deploy_local as dl  # noqa: E402

from fl_r2sp.flower.processes import (  # noqa: E402
    flower_env,
    free_ports,
    start_group,
    stop_groups,
    wait_http_ok,
)

#: One rejected attacker per group of the default 2 groups (ids 1, 2), one more in group 1
#: (examples -5, id 3) and an accepted sign flipper (id 4).
ATTACK = "huge(1e30)@1+scale(1000)@2+examples(-5)@3+sign-flip@4"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-supernodes", type=int, default=8)
    p.add_argument("--groups", type=int, default=2, help="num-groups (default: 2)")
    p.add_argument(
        "--fraction",
        type=float,
        default=0.5,
        help="C (default 0.5: a group of 4 collects 2, so one lost and one rejected member "
        "do not hold it up)",
    )
    p.add_argument("--duration", type=float, default=120.0, help="time-budget of the run, s")
    p.add_argument("--kill-every", type=float, default=12.0, help="seconds between kills")
    p.add_argument("--down", type=float, default=6.0, help="seconds a killed node stays down")
    p.add_argument("--sigkill-share", type=float, default=0.25, help="kills that are SIGKILL")
    p.add_argument("--seed", type=int, default=0, help="seed of the kill schedule and the run")
    p.add_argument("--attack", default=ATTACK, help=f"attack knob (default: {ATTACK})")
    p.add_argument("--run-config", default="", help="extra run-config overrides")
    p.add_argument("--timeout", type=float, default=600.0, help="hard bound on the whole run, s")
    p.add_argument("--keep-home", action="store_true", help="keep the FLWR_HOME folder")
    return p.parse_args(argv)


def run_config(args: argparse.Namespace, run_dir: Path) -> str:
    """The run's overrides: wall clock, short local jobs, the attack, the time budget."""
    keys = (
        f"num-groups={args.groups} fraction={args.fraction:g} local-iterations=5 eval-every=4 "
        f"max-updates=0 time-budget={args.duration:g} seed={args.seed} plots=false "
        f"job-timeout=120.0 max-lost-share=1.0 node-wait=60.0 attack='{args.attack}' "
        f"run-dir='{run_dir.as_posix()}'"
    )
    return f"{keys} {args.run_config}".strip()


class Chaos:
    """Kills and restarts SuperNodes on a seeded schedule (one thread)."""

    def __init__(self, args: argparse.Namespace, start_node: Any, procs: dict[int, Any]) -> None:
        self.args, self.start_node, self.procs = args, start_node, procs
        self.rng = np.random.default_rng([args.seed, 99])
        self.stop = threading.Event()
        self.log: list[str] = []
        self.kills = self.restarts = 0

    def run(self, lines: list[str]) -> None:
        """Once the first model is evaluated (a line of ``lines``), kill and restart nodes.

        Loops until :attr:`stop`: wait, kill one node, wait, restart it.
        """
        n, m = self.args.num_supernodes, self.args.groups
        while not any("] update " in line for line in lines):
            if self.stop.wait(1.0):  # the ServerApp starts in 30-60 s on a busy machine
                return
        self.note("the run is training: chaos starts")
        while not self.stop.wait(self.args.kill_every):
            pid = int(self.rng.integers(n))
            sig = signal.SIGKILL if self.rng.random() < self.args.sigkill_share else signal.SIGTERM
            proc = self.procs[pid]
            try:
                os.killpg(proc.pid, sig)  # the node and its ClientApp processes
            except ProcessLookupError:
                continue
            proc.wait(timeout=30)
            self.kills += 1
            self.note(f"killed partition {pid} (group {pid % m}) with {sig.name}")
            if self.stop.wait(self.args.down):
                break
            self.procs[pid] = self.start_node(pid)
            self.restarts += 1
            self.note(f"restarted partition {pid}")

    def note(self, text: str) -> None:
        line = f"chaos t={time.monotonic() - T0:6.1f}s: {text}"
        self.log.append(line)
        print(line, flush=True)


T0 = time.monotonic()


def report(run_dir: Path) -> int:
    """Print the ledger and the stall check of the one run folder; 0 if no stalled gap."""
    folders = [p for p in run_dir.iterdir() if p.is_dir()] if run_dir.is_dir() else []
    if len(folders) != 1:
        print(f"chaos: expected one run folder in {run_dir}, found {folders}")
        return 1
    folder = folders[0]
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    print(f"chaos: run folder {folder.name}, status {summary.get('status')}")
    print(f"  stopped: {summary.get('stopped')}; global updates {summary.get('global_updates')}")
    print(f"  final accuracy {summary.get('final_accuracy')}")
    print(f"  ledger: accepted {summary.get('updates_accepted')}")
    print(f"          rejected {summary.get('updates_rejected')}")
    print(f"          dropped  {summary.get('jobs_dropped')}")
    kinds = ("client_rejoin", "group_empty", "blacklist")
    for kind in kinds:
        rows = [r for r in records if r["kind"] == kind]
        print(f"  {kind}: {len(rows)} {[r.get('cid', r.get('group')) for r in rows]}")
    applies = sorted(r["t"] for r in records if r["kind"] == "group_apply")
    rounds = [r["round_time"] for r in records if r["kind"] == "group_collect"]
    if len(applies) < 2 or not rounds:
        print("chaos: fewer than two global updates: nothing to check")
        return 1
    gaps = np.diff([0.0, *applies])
    median = statistics.median(rounds)
    stalled = [
        (round(a, 1), round(g, 1)) for a, g in zip(applies, gaps, strict=True) if g > 2 * median
    ]
    print(
        f"  gaps between global updates: max {gaps.max():.2f}s, median {np.median(gaps):.2f}s; "
        f"median group round time {median:.2f}s; stalled (gap > 2x median round time): "
        f"{len(stalled)} {stalled}"
    )
    return 0 if not stalled and summary.get("status") == "completed" else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="flwr-chaos-"))
    env = flower_env(home)
    n = args.num_supernodes
    link_port, *node_ports = free_ports(1 + n)
    dl.write_flower_config(home, link_port)
    (home / "logs").mkdir()
    app = HERE.parent
    others: list[Any] = []
    nodes: dict[int, Any] = {}

    def start_node(i: int) -> Any:
        log = open(home / "logs" / f"supernode-{i}.log", "ab")  # noqa: SIM115 (the child keeps it)
        return start_group(dl.supernode_cmd(link_port, node_ports[i], i, n), env, app, log)

    chaos = Chaos(args, start_node, nodes)
    code = 1
    try:
        link_log = open(home / "logs" / "superlink.log", "wb")  # noqa: SIM115
        others.append(
            start_group(dl.superlink_cmd(link_port, home / "state.db"), env, app, link_log)
        )
        wait_http_ok(f"http://127.0.0.1:{link_port}/health", 60.0, others[0], None)
        for i in range(n):
            nodes[i] = start_node(i)
        cmd = dl.flwr_run_cmd(app, n, run_config(args, home / "runs"))
        print("$", " ".join(cmd), flush=True)
        flwr = subprocess.Popen(
            cmd,
            env=env,
            cwd=app,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        others.append(flwr)
        lines: list[str] = []
        dl.stream(flwr, lines)
        thread = threading.Thread(target=chaos.run, args=(lines,), daemon=True)
        thread.start()
        try:
            flwr.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"chaos: the run did not end within {args.timeout:g} s", flush=True)
            return 124
        finally:
            chaos.stop.set()
            thread.join(timeout=60)
        print(f"chaos: {chaos.kills} kills, {chaos.restarts} restarts; flwr exit {flwr.returncode}")
        code = report(home / "runs")
        return code
    finally:
        stop_groups(list(nodes.values()) + others[1:])
        stop_groups(others[:1])
        if args.keep_home or code != 0:
            print(f"chaos: FLWR_HOME kept at {home}", flush=True)
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

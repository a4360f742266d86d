#!/usr/bin/env python
"""A bounded chaos run on loopback: SuperNodes killed and restarted, hostile updates.

One SuperLink and N SuperNodes as in ``scripts/deploy_local.py`` (insecure,
loopback, temporary ``FLWR_HOME``); the app runs on the wall clock with
hostile and fuzzing clients from the ``attack`` knob (default, 8 nodes in 2
groups of 4: every group has two members whose every update is rejected, a
1e30 client and one claiming ``num-examples = -5`` in group 1, one sending a
NaN and one a vector of the wrong size in group 0, plus a sign flipper in
group 1, which admission accepts). While it runs, a seeded schedule kills a
random live SuperNode every ``--kill-every`` seconds, at most ``--kills``
times (SIGTERM, which deactivates the node at the SuperLink at once, or
SIGKILL, which the SuperLink notices only when the heartbeat expires, 36-60 s)
and restarts it ``--down`` seconds later with the same ``partition-id`` (a new
node id: the server must re-attach it). One node is down at a time, so every
group keeps members.

It also acts as an operator would on a *wedged* SuperNode: one the ServerApp reports silent
(its partition queries unanswered, :data:`fl_r2sp.fl.flower.discovery.SILENT`)
``--restart-silent`` times in a row is stopped and started again at once with its partition
id (its node id read from its log); each such restart is printed and counted apart from the
kills.

It waits for the run's end as the SuperLink reports it (``flwr ls``; ``flwr run --stream``
can exit 0 while the run still trains, its log stream re-attached then), for as long as the
run progresses (:func:`fl_r2sp.fl.flower.run_watch.watch_for`: a logged global update within
4x the longest gap so far and at least the run's own ``max-update-gap`` + 300 s; silence
before the first for at most its ``node-wait`` + 300 s, at least 600 s; the script's
``eval-every=1`` logs every update). At
the end it prints the SuperLink's status, the ledger from the run's ``summary.json`` (accepted,
rejected by reason, dropped by reason), the liveness records (re-attached
clients, empty groups, rejected answers, passed turns) and the gaps between
global updates, and checks that none is longer than 2x the median group
round time ("stalled") and that every re-attached node answered a job within
its group's next two applications. Exit code: 0 if the run completed with no
stalled gap and no re-attached node left without work and the SuperLink says
``finished:completed``, 1 otherwise (a run without any global update has failed), 2 on a
bad ``--run-config``, 124 on ``--timeout`` or when the run stopped progressing.

Its run-config keys (``run_config``) are defaults: the user's ``--run-config`` keys are
applied over them (``--run-config "job-timeout=300"`` replaces the script's value). The job
limit adapts to the machine: at least 60 s x the load per core at the start (at most 600 s),
else 4 x the EMA of the measured job round trips.

Usage::

    python scripts/chaos.py --num-supernodes 8 --duration 120 --seed 0
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent):  # run as a script from a checkout
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import deploy_local as dl  # noqa: E402

from fl_r2sp.fl.flower.discovery import SILENT  # noqa: E402
from fl_r2sp.fl.flower.processes import (  # noqa: E402
    flower_env,
    free_ports,
    rss_by_group,
    start_group,
    stop_groups,
    wait_http_ok,
)
from fl_r2sp.fl.flower.run_config_check import check_run_config, merge_overrides  # noqa: E402
from fl_r2sp.fl.flower.run_watch import RunEnd, follow_flwr_run, watch_for  # noqa: E402
from fl_r2sp.fl.server.admission import OFFLINE_PREFIX, TIMEOUT_PREFIX  # noqa: E402

#: Two always-rejected members in each default group of 4 (group 1: ids 1 and 3, a 1e30 update
#: and num-examples = -5; group 0: ids 2 and 4, a NaN and a wrong-size vector) and an accepted
#: sign flipper (id 5, group 1).
ATTACK = "huge(1e30)@1+examples(-5)@3+nan@2+shape(1)@4+sign-flip@5"
#: The line a SuperNode logs once connected, with its node id.
NODE_ID = re.compile(rb"SuperNode ID: (\d+)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-supernodes", type=int, default=8)
    p.add_argument("--groups", type=int, default=2, help="num-groups (default: 2)")
    p.add_argument(
        "--fraction",
        type=float,
        default=0.75,
        help="C (default 0.75, the paper's: a group of 4 needs 3 answers; rejected updates "
        "count as answers, excluded from the mean)",
    )
    p.add_argument("--duration", type=float, default=120.0, help="time-budget of the run, s")
    p.add_argument("--kill-every", type=float, default=12.0, help="seconds between kills")
    p.add_argument("--kills", type=int, default=0, help="most kills (default 0: no limit)")
    p.add_argument("--down", type=float, default=6.0, help="seconds a killed node stays down")
    p.add_argument("--sigkill-share", type=float, default=0.25, help="kills that are SIGKILL")
    p.add_argument(
        "--restart-silent",
        type=int,
        default=2,
        help="restart a SuperNode the ServerApp reported silent this many times in a row (each "
        "report: a partition query unanswered for 120 s; default 2; 0 = never)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the kill schedule and the run")
    p.add_argument("--attack", default=ATTACK, help=f"attack knob (default: {ATTACK})")
    p.add_argument("--run-config", default="", help="extra run-config overrides")
    p.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        help="hard bound on the whole run, s (default 0 = none: the progress watch bounds it)",
    )
    p.add_argument("--keep-home", action="store_true", help="keep the FLWR_HOME folder")
    p.add_argument(
        "--run-dir", type=Path, default=None, help="run-dir of the app (default: in FLWR_HOME)"
    )
    return p.parse_args(argv)


def run_config(args: argparse.Namespace, run_dir: Path) -> dict[str, Any]:
    """The run's keys: wall clock, short local jobs, the attack, the time budget; then the
    user's ``--run-config`` over them (the user's value wins)."""
    own = {
        "clock": "wall", "num-partitions": args.num_supernodes, "num-groups": args.groups,
        # eval-every 1: every global update is logged, the progress the run is followed by.
        "fraction": args.fraction, "local-iterations": 5, "eval-every": 1, "max-updates": 0,
        "time-budget": args.duration, "seed": args.seed, "plots": False,
        # Half the nodes are hostile by design: losses and rejections are not failures here.
        "max-lost-share": 1.0, "max-rejected-share": 1.0, "node-wait": 60.0,
        # The job limit adapts to the machine: 4 x the EMA of the measured round trips, at
        # least a floor that follows the load now (a loaded machine raises both instead of
        # failing every job).
        "job-timeout": job_timeout_floor(), "job-timeout-factor": 4.0,
        "attack": args.attack, "run-dir": run_dir.as_posix(),
    }  # fmt: skip
    return merge_overrides(own, args.run_config)


def job_timeout_floor(base: float = 60.0, most: float = 600.0) -> float:
    """``base`` s times the machine's load per core now (at least 1), at most ``most`` s.

    The first jobs have no measured round trip yet; on a machine at load 16 on 2 cores a
    ClientApp takes a minute or more to start, and a fixed floor would fail them all.
    """
    load = os.getloadavg()[0] / max(1, os.cpu_count() or 1)
    return round(min(most, base * max(1.0, load)), 1)


def node_partitions(logs: Path, n: int) -> dict[int, int]:
    """{node id: partition} of the SuperNodes of ``logs`` (``supernode-<i>.log``, i < ``n``).

    A log holds every start of its partition's SuperNode: the last id logged is the current
    one (a restarted node logs its new id once connected).
    """
    out: dict[int, int] = {}
    for i in range(n):
        path = logs / f"supernode-{i}.log"
        ids = NODE_ID.findall(path.read_bytes()) if path.exists() else []
        if ids:
            out[int(ids[-1])] = i
    return out


class Chaos:
    """Kills and restarts SuperNodes on a seeded schedule; restarts silent ones (two threads).

    ``logs`` is the folder of the SuperNodes' logs (:func:`node_partitions`).
    """

    def __init__(
        self, args: argparse.Namespace, start_node: Any, procs: dict[int, Any], logs: Path
    ) -> None:
        self.args, self.start_node, self.procs, self.logs = args, start_node, procs, logs
        self.rng = np.random.default_rng([args.seed, 99])
        self.stop = threading.Event()
        self.lock = threading.Lock()  # one of the two threads stops or starts a node at a time
        self.log: list[str] = []
        self.kills = self.restarts = self.silent_restarts = 0
        self._restarted: set[int] = set()  # node ids restarted as silent

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
            if self.args.kills and self.kills >= self.args.kills:
                return
            pid = int(self.rng.integers(n))
            sig = signal.SIGKILL if self.rng.random() < self.args.sigkill_share else signal.SIGTERM
            with self.lock:
                if not self._stop_node(pid, sig):
                    continue
                self.kills += 1
                self.note(f"killed partition {pid} (group {pid % m}) with {sig.name}")
                if self.stop.wait(self.args.down):
                    break
                self.procs[pid] = self.start_node(pid)
                self.restarts += 1
                self.note(f"restarted partition {pid}")

    def watch_silent(self, lines: list[str]) -> None:
        """Restart each SuperNode the ServerApp reports silent ``--restart-silent`` times.

        Reads the new ``lines`` every second until :attr:`stop`. The node is stopped
        (SIGTERM, SIGKILL after 30 s) and started again at once with its partition id: a
        new node id, which the ServerApp asks like any newcomer. A node id is restarted once;
        one not found in the logs (or not the current node of its partition) is left alone.
        """
        read = 0
        while not self.stop.wait(1.0):
            fresh, read = lines[read : len(lines)], len(lines)
            self.restart_silent(fresh)

    def restart_silent(self, fresh: list[str]) -> None:
        """Restart the nodes ``fresh`` lines report silent often enough (:meth:`watch_silent`)."""
        for match in filter(None, map(SILENT.search, fresh)):
            node, asked = int(match[1]), int(match[2])
            if asked < self.args.restart_silent or node in self._restarted:
                continue
            self._restarted.add(node)
            with self.lock:  # not while the schedule has a node down
                pid = node_partitions(self.logs, self.args.num_supernodes).get(node)
                if self.stop.is_set() or pid is None or not self._stop_node(pid, signal.SIGTERM):
                    continue
                self.procs[pid] = self.start_node(pid)
            self.silent_restarts += 1
            self.note(f"restarted silent partition {pid} (node {node}, {asked} queries)")

    def _stop_node(self, pid: int, sig: signal.Signals) -> bool:
        """Send ``sig`` to partition ``pid``'s SuperNode and its ClientApps; wait for its end
        (SIGKILL after 30 s). False if it was already gone."""
        proc = self.procs[pid]
        try:
            os.killpg(proc.pid, sig)  # the node and its ClientApp processes
        except ProcessLookupError:
            return False
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        return True

    def note(self, text: str) -> None:
        line = f"chaos t={time.monotonic() - T0:6.1f}s: {text}"
        self.log.append(line)
        print(line, flush=True)


T0 = time.monotonic()


class MemoryWatch:
    """Peak resident memory of each SuperNode with its ClientApps (a thread, every ``every`` s)."""

    def __init__(self, procs: dict[int, Any], every: float = 10.0) -> None:
        self.procs, self.every = procs, every
        self.peak: dict[int, int] = {}  # partition -> bytes
        self.stop = threading.Event()

    def run(self) -> None:
        """Sample until :attr:`stop`."""
        while not self.stop.wait(self.every):
            groups = {p.pid: i for i, p in list(self.procs.items())}
            for pgid, rss in rss_by_group(groups).items():
                i = groups[pgid]
                self.peak[i] = max(self.peak.get(i, 0), rss)

    def line(self) -> str:
        """``memory per node ...``: median and largest peak, in MiB."""
        if not self.peak:
            return "memory per node: not sampled (the run ended within one interval)"
        mib = sorted(v / 2**20 for v in self.peak.values())
        return (
            f"memory per node (peak RSS of the SuperNode and its ClientApps, {len(mib)} nodes): "
            f"median {statistics.median(mib):.0f} MiB, largest {mib[-1]:.0f} MiB"
        )


@dataclass
class Verdict:
    """What the chaos run's folder shows (:func:`analyse`).

    Attributes
    ----------
    summary : dict
        ``summary.json``'s summary (ledger, status, global updates ...).
    records : list of dict
        ``records.jsonl``.
    gaps : list of float
        Seconds between consecutive global updates (the first from the loop's start).
    median_round : float
        Median group round time (release to collection).
    stalled : list of (float, float)
        (time, gap) of every gap after the first global update longer than 2x
        ``median_round`` (the first gap holds every ClientApp's start-up, not a stall).
    rejoins : list of (int, float, bool or None)
        (partition, time re-attached, whether a reply of it (an update, rejected or
        not, or an error reply) came after the re-attachment and by its group's
        second application after it, or by the end of the run if fewer followed);
        None: fewer followed and no reply came (the run ended too soon to tell).
    """

    summary: dict[str, Any]
    records: list[dict[str, Any]]
    gaps: list[float]
    median_round: float
    stalled: list[tuple[float, float]]
    rejoins: list[tuple[int, float, bool]]

    @property
    def ok(self) -> bool:
        """Completed, with at least two global updates, no stalled gap, no rejoin left idle."""
        return (
            self.summary.get("status") == "completed"
            and len(self.gaps) >= 2
            and not self.stalled
            and all(done is not False for _, _, done in self.rejoins)
        )


def analyse(run_dir: Path) -> Verdict:
    """Read the one run folder under ``run_dir`` and check gaps and re-attachments."""
    folders = [p for p in run_dir.iterdir() if p.is_dir()] if run_dir.is_dir() else []
    if len(folders) != 1:
        raise RuntimeError(f"chaos: expected one run folder in {run_dir}, found {folders}")
    folder = folders[0]
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    if summary.get("stopped") == "before training":  # its folder has the summary alone
        return Verdict(summary, [], [], float("nan"), [], [])
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    with open(folder / "jobs.csv", newline="") as fh:
        jobs = list(csv.DictReader(fh))
    applies = sorted(r["t"] for r in records if r["kind"] == "group_apply")
    rounds = [r["round_time"] for r in records if r["kind"] == "group_collect"]
    gaps = [float(g) for g in np.diff([0.0, *applies])]
    median = statistics.median(rounds) if rounds else float("nan")
    # From the second update on: the first gap runs from the loop's start and holds every
    # ClientApp's start-up (248 s with 32 SuperNodes on 2 cores), which is no stall.
    stalled = [(a, g) for a, g in zip(applies[1:], gaps[1:], strict=True) if g > 2 * median]
    return Verdict(summary, records, gaps, median, stalled, _rejoins(records, jobs))


def _rejoins(records: list[dict[str, Any]], jobs: list[dict[str, str]]) -> list[Any]:
    """Per re-attachment: did the partition answer a job within its group's next 2 applies?"""
    out = []
    for row in (r for r in records if r["kind"] == "client_rejoin"):
        cid, t = int(row["cid"]), float(row["t"])
        later = sorted(
            a["t"] for a in records if a["kind"] == "group_apply" and a["group"] == row["group"]
        )
        later = [a for a in later if a > t]
        end = later[1] if len(later) >= 2 else float("inf")  # else: by the end of the run
        # A reply after the re-attachment can only come from the new node; lost jobs (offline,
        # timed out) also get a push_end, the time they were given up.
        answered = any(
            int(j["cid"]) == cid
            and j.get("push_end")
            and t < float(j["push_end"]) <= end
            and not (j.get("failed") or "").startswith((OFFLINE_PREFIX, TIMEOUT_PREFIX))
            for j in jobs
        )
        out.append((cid, t, True if answered else (False if len(later) >= 2 else None)))
    return out


def report(run_dir: Path, end: RunEnd) -> int:
    """Print the ledger and the checks of the one run folder; 0 if :attr:`Verdict.ok` and the
    SuperLink says the run completed (``end``)."""
    try:
        v = analyse(run_dir)
    except (RuntimeError, OSError, ValueError) as exc:
        print(f"chaos: {exc}")
        return 1
    s = v.summary
    print(f"chaos: status {s.get('status')}; stopped: {s.get('stopped')}")
    print(f"  global updates {s.get('global_updates')}; final accuracy {s.get('final_accuracy')}")
    print(f"  ledger: accepted {s.get('updates_accepted')}")
    print(f"          rejected {s.get('updates_rejected')}")
    print(f"          dropped  {s.get('jobs_dropped')}")
    print(f"          in flight at the stop {s.get('jobs_in_flight')}")
    print(
        f"  lost: clients {s.get('clients_lost')}; longest gap between updates "
        f"{s.get('longest_update_gap', float('nan')):.1f}s; job limit at the end "
        f"{s.get('job_limit_final', float('nan')):.0f}s; failure: {s.get('failure')}"
    )
    for kind in ("client_rejoin", "group_empty", "blacklist", "client_rejected", "group_pass"):
        rows = [r for r in v.records if r["kind"] == kind]
        print(f"  {kind}: {len(rows)} {[r.get('cid', r.get('group')) for r in rows]}")
    if len(v.gaps) < 2:
        print("chaos: fewer than two global updates: nothing to check")
        return 1
    print(
        f"  gaps between global updates: max {max(v.gaps):.2f}s, median "
        f"{statistics.median(v.gaps):.2f}s; median group round time {v.median_round:.2f}s; "
        f"stalled (gap > 2x median round time): {len(v.stalled)} "
        f"{[(round(a, 1), round(g, 1)) for a, g in v.stalled]}"
    )
    late = [(c, round(t, 1)) for c, t, done in v.rejoins if done is False]
    open_ = [(c, round(t, 1)) for c, t, done in v.rejoins if done is None]
    print(
        f"  re-attached: {len(v.rejoins)}; without work within 2 group rounds: {late}; "
        f"run ended too soon to tell: {open_}"
    )
    return 0 if v.ok and end.completed else 1


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
    runs = args.run_dir.resolve() if args.run_dir is not None else home / "runs"
    try:  # a malformed token of --run-config is refused here too
        keys = run_config(args, runs)
        check_run_config(keys)  # before Flower sees it: its refusal names no key
    except ValueError as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        shutil.rmtree(home, ignore_errors=True)
        return 2
    others: list[Any] = []
    nodes: dict[int, Any] = {}

    def start_node(i: int) -> Any:
        log = open(home / "logs" / f"supernode-{i}.log", "ab")  # noqa: SIM115 (the child keeps it)
        return start_group(dl.supernode_cmd(link_port, node_ports[i], i, n), env, app, log)

    chaos = Chaos(args, start_node, nodes, home / "logs")
    code = 1
    try:
        link_log = open(home / "logs" / "superlink.log", "wb")  # noqa: SIM115
        others.append(
            start_group(dl.superlink_cmd(link_port, home / "state.db"), env, app, link_log)
        )
        wait_http_ok(f"http://127.0.0.1:{link_port}/health", 60.0, others[0], None)
        for i in range(n):
            nodes[i] = start_node(i)
        cmd = dl.flwr_run_cmd(app, keys)
        print("$", " ".join(cmd), flush=True)
        lines: list[str] = []
        thread = threading.Thread(target=chaos.run, args=(lines,), daemon=True)
        thread.start()
        watch = threading.Thread(target=chaos.watch_silent, args=(lines,), daemon=True)
        if args.restart_silent > 0:
            watch.start()
        memory = MemoryWatch(nodes)
        threading.Thread(target=memory.run, daemon=True).start()
        deadline = time.monotonic() + args.timeout if args.timeout else None
        try:
            end = follow_flwr_run(cmd, env, app, dl.CONNECTION, lines, watch_for(keys), deadline)
        finally:
            chaos.stop.set()
            memory.stop.set()
            thread.join(timeout=60)
            if watch.is_alive():  # no node started after the nodes are stopped below
                watch.join(timeout=90)
        print(
            f"chaos: {chaos.kills} kills, {chaos.restarts} restarts, {chaos.silent_restarts} "
            f"silent nodes restarted; {end.describe()}"
        )
        print(f"chaos: {memory.line()}")
        if end.gave_up is not None:
            print(f"chaos: gave up waiting for the run: {end.gave_up}", flush=True)
            return 124
        code = report(runs, end)
        return code
    finally:
        stop_groups(list(nodes.values()))  # before the SuperLink: they deregister from it
        stop_groups(others)
        if args.keep_home or code != 0:
            print(f"chaos: FLWR_HOME kept at {home}", flush=True)
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

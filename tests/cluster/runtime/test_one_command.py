"""The one command ``python -m fl_r2sp.cluster`` as a user runs it: each scheme's rule on a lost
worker, the run folder of every ending, and the refused degenerate settings.

The kill tests start the command as a subprocess (tiny MLP, synthetic data, an injected delay
per iteration so that the run lasts while it is watched), read the rank to kill from
``run.json`` as soon as the ranks are up, wait until that worker has flushed two iteration
rows to ``workers.csv`` and SIGKILL it by pid. Every wait polls the run folder or the process
(no fixed sleeps); the bound :data:`HANG_S` only keeps a broken run from hanging the suite.
The refusals parse the flags in process: no rank is ever started.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fl_r2sp.cluster.__main__ import main
from fl_r2sp.cluster.cli import parse
from fl_r2sp.cluster.runtime.common.job import EXIT_TIMEOUT
from fl_r2sp.cluster.telemetry import read_rows

#: Seconds after which a wait gives up (a hang, not a timing assertion).
HANG_S = 400.0
JOB = ["--model", "mlp", "--dataset", "synthetic", "--batch-size", "8", "--run-timeout", "150",
       "--seed", "3"]  # fmt: skip


def _start(tmp_path: Path, scheme: str, *flags: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "fl_r2sp.cluster", "--scheme", scheme, *JOB,
            "--run-dir", str(tmp_path), *flags]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip


def _until(what: str, proc: subprocess.Popen[str], probe: Callable[[], Any]) -> Any:
    """Poll ``probe`` until it returns something truthy; fail if the command ends first."""
    end = time.monotonic() + HANG_S
    while time.monotonic() < end:
        got = probe()
        if got:
            return got
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended ({proc.returncode}) before {what}: {err[-3000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no {what} within {HANG_S:.0f}s")


def _roster(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]] | None:
    for path in tmp_path.glob("*/run.json"):
        try:
            ranks = json.loads(path.read_text()).get("ranks")
        except ValueError:  # being written
            return None
        return (path.parent, ranks) if ranks else None
    return None


def _iterations(run_dir: Path, workers: int) -> list[int]:
    counts = [0] * workers
    try:
        with open(run_dir / "workers.csv", newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("t_end"):  # a complete line
                    counts[int(row["worker"])] += 1
    except FileNotFoundError:
        pass
    return counts


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waits for its reaper: it is not running
        return fh.read().split(")")[-1].split()[0] == "Z"


PS = ["--servers", "1", "--iterations", "20", "--delays", "0.1,0.1,0.1"]
REDUCE = ["--iterations", "20", "--delays", "0.1,0.1,0.1"]
# Rows reach workers.csv at the period boundaries: a short period lets the kill come early.
DSSYNC = ["--iterations", "20", "--delays", "0.1,0.1,0.1", "--regroup-period", "5"]
#: scheme, its flags (3 workers), expected exit status. Every timeout is the default: the loss
#: must be found by its evidence (the supervisor's process exit, a closed connection).
KILLS = [
    ("asp", PS, 0),
    ("r2sp", PS, 0),
    ("r2sp", [*PS, "--r2sp-push-order", "permission"], 0),
    ("ssp", [*PS, "--ssp-bound", "2"], 0),
    ("safa", PS, 0),
    ("bsp", PS, 1),
    ("osp", [*PS, "--momentum", "0"], 1),
    ("osp-s", [*PS, "--momentum", "0"], 1),
    ("osp-c", [*PS, "--momentum", "0"], 1),
    ("allreduce", REDUCE, 0),
    ("selective", REDUCE, 0),
    ("partial", REDUCE, 0),
    ("dssync", [*DSSYNC, "--racks", "0,1/2"], 0),
    ("hierarchical", [*DSSYNC, "--racks", "0,1/2"], 0),
    ("gossip", DSSYNC, 0),
]  # fmt: skip
#: How a loss may be known; a timeout is not evidence enough when the process died.
EVIDENCE = {"process exit", "closed connection"}


def kill_case(tmp_path: Path, scheme: str, flags: list[str]) -> dict[str, Any]:
    """Start ``scheme`` with 3 workers, SIGKILL worker 1 (the rank ``run.json`` names) after
    its second iteration, wait for the command's end; return what a test or the benchmark
    reads: ``proc``, ``err``, ``ranks``, ``victim``, ``run_dir``, ``summary``, ``done``
    (iterations per worker in ``workers.csv``), ``killed_at`` (``time.time()``) and
    ``kill_to_end_s``."""
    proc = _start(tmp_path, scheme, "--workers", "3", *flags)
    run_dir, ranks = _until("run.json names the ranks", proc, lambda: _roster(tmp_path))
    victim = next(r for r in ranks if r.get("worker") == 1 and r["rank"] != 0)
    _until("two iterations of worker 1", proc, lambda: _iterations(run_dir, 3)[1] >= 2)
    os.kill(victim["pid"], signal.SIGKILL)
    killed, killed_at = time.monotonic(), time.time()
    _, err = proc.communicate(timeout=HANG_S)
    return {
        "killed_at": killed_at,
        "proc": proc,
        "err": err,
        "ranks": ranks,
        "victim": victim,
        "run_dir": run_dir,
        "summary": json.loads((run_dir / "summary.json").read_text()),
        "done": _iterations(run_dir, 3),
        "kill_to_end_s": time.monotonic() - killed,
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scheme", "flags", "status"),
    [pytest.param(scheme, flags, status, id=scheme + "-permission" * ("permission" in flags))
     for scheme, flags, status in KILLS],
)  # fmt: skip
def test_a_killed_worker_ends_the_run_by_the_schemes_rule(
    tmp_path: Path, scheme: str, flags: list[str], status: int
) -> None:
    case = kill_case(tmp_path, scheme, flags)
    proc, err, ranks, summary = case["proc"], case["err"], case["ranks"], case["summary"]
    run_dir, victim, done = case["run_dir"], case["victim"], case["done"]
    print(f"\nKILL {scheme} rank {victim['rank']} exit {proc.returncode} status "
          f"{summary['status']} iterations {done} in {case['kill_to_end_s']:.1f}s")  # fmt: skip
    assert proc.returncode == status, err[-3000:]
    servers = 0 if scheme == "osp-c" or "--servers" not in flags else 1
    assert len(ranks) == 3 + servers
    assert victim["rank"] == servers + 1  # one numbering for every family
    for name in ("config.json", "run.json", "workers.csv", "permissions.csv", "COMPLETE"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "run.json").read_text())["ranks"] == ranks  # kept at the end
    who = f"worker 1 (rank {victim['rank']})"
    assert list(summary["lost_workers"]) == ["1"], summary["lost_workers"]
    assert who in summary["lost_workers"]["1"]
    assert summary["lost_evidence"]["1"] in EVIDENCE, summary["lost_evidence"]
    if status == 0:
        assert summary["status"] == "ok" and summary["reason"]
        assert (run_dir / "gantt.png").is_file()  # every family draws the worker phases
        assert summary["iterations_per_worker"] == done
        assert done[1] < min(done[0], done[2])  # the others went on without it
    else:
        assert summary["status"] == "failed"
        assert f"{who} lost" in summary["reason"] and f"{who} lost" in err
    _until("every rank gone", proc, lambda: all(_gone(r["pid"]) for r in ranks))


def test_ctrl_c_stops_every_rank_and_keeps_the_rows(tmp_path: Path) -> None:
    proc = _start(tmp_path, "asp", "--workers", "2", "--servers", "1", "--iterations", "400",
                  "--delays", "0.1,0.1")  # fmt: skip
    run_dir, ranks = _until("run.json names the ranks", proc, lambda: _roster(tmp_path))
    _until("two iterations of worker 0", proc, lambda: _iterations(run_dir, 2)[0] >= 2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, err[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and "signal" in summary["reason"]
    assert summary["iterations_per_worker"][0] >= 2
    assert all(_gone(r["pid"]) for r in ranks)


#: scheme, its flags (2 workers), the name of rank 0, the CSV files rank 0 streams
RANK0 = [
    ("asp", ["--servers", "1", "--delays", "0.1,0.1"], "parameter server 0",
     ("ps_updates.csv", "permissions.csv")),
    ("partial", ["--delays", "0.1,0.1", "--ready-timeout", "10"], "worker 0",
     ("permissions.csv",)),
]  # fmt: skip


@pytest.mark.parametrize(("scheme", "flags", "name", "streamed"), RANK0, ids=["asp", "partial"])
def test_a_lost_rank_0_ends_the_run_naming_it(
    tmp_path: Path, scheme: str, flags: list[str], name: str, streamed: tuple[str, ...]
) -> None:
    proc = _start(tmp_path, scheme, "--workers", "2", "--iterations", "400", *flags)
    run_dir, ranks = _until("run.json names the ranks", proc, lambda: _roster(tmp_path))
    _until("two iterations of worker 0", proc, lambda: _iterations(run_dir, 2)[0] >= 2)
    os.kill(ranks[0]["pid"], signal.SIGKILL)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 1
    assert f"{name} (rank 0) was killed by signal 9" in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and "rank 0" in summary["reason"]
    assert not (run_dir / "COMPLETE").exists()  # rank 0 never wrote its files at the end...
    for csv_name in streamed:  # ...but they grew while it ran
        assert read_rows(run_dir / csv_name), csv_name
    _until("every rank gone", proc, lambda: all(_gone(r["pid"]) for r in ranks))


#: One short run per family (2 workers).
FAMILIES = [
    ("asp", ["--servers", "1", "--delays", "0.1,0.1"]),
    ("partial", ["--delays", "0.1,0.1"]),
    ("dssync", ["--racks", "0/1", "--delays", "0.1,0.1", "--regroup-period", "5"]),
]  # fmt: skip
#: What every family's summary holds, whoever wrote it.
SUMMARY_FIELDS = {"status", "reason", "lost_workers", "lost_evidence", "iterations_per_worker"}


@pytest.mark.parametrize(("scheme", "flags"), FAMILIES, ids=[s for s, _ in FAMILIES])
def test_the_run_timeout_ends_as_timeout(tmp_path: Path, scheme: str, flags: list[str]) -> None:
    # The last --run-timeout wins over JOB's. Every family's rank 0 keeps the limit itself
    # (no family leaves it to the ranks' watchdog, a minute later).
    proc = _start(tmp_path, scheme, "--workers", "2", "--iterations", "100000", *flags,
                  "--run-timeout", "3")  # fmt: skip
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == EXIT_TIMEOUT, err[-3000:]
    run_dir = next(tmp_path.glob("*/summary.json")).parent
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "timeout"
    assert "--run-timeout 3 s" in summary["reason"]
    assert set(summary) >= SUMMARY_FIELDS
    assert (run_dir / "COMPLETE").is_file()  # rank 0 wrote it up, not the supervisor
    assert sum(summary["iterations_per_worker"]) == len(read_rows(run_dir / "workers.csv")) > 0


@pytest.mark.parametrize(("scheme", "flags"), FAMILIES, ids=[s for s, _ in FAMILIES])
def test_every_family_takes_the_same_flags_and_writes_the_same_summary(
    tmp_path: Path, scheme: str, flags: list[str]
) -> None:
    proc = _start(tmp_path, scheme, "--workers", "2", "--iterations", "10", *flags,
                  "--no-plots")  # fmt: skip
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 0, err[-3000:]
    (run_dir,) = (p.parent for p in tmp_path.glob("*/COMPLETE"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary) >= SUMMARY_FIELDS
    assert summary["status"] == "ok" and summary["lost_workers"] == {}
    assert sum(summary["iterations_per_worker"]) == len(read_rows(run_dir / "workers.csv")) > 0
    assert not list(run_dir.glob("*.png"))  # --no-plots means the same everywhere


REFUSED = [
    (["--scheme", "partial", "--workers", "4", "--group-min", "9"], "exceeds the 4 workers"),
    (["--scheme", "selective", "--workers", "4", "--group-min", "1"], "never synchronises"),
    (["--scheme", "partial", "--workers", "1"], "never synchronises"),
    (["--scheme", "selective", "--workers", "4", "--full-sync-every", "1"], "full all-reduce"),
    (["--scheme", "dssync", "--workers", "4"], "without racks is plain all-reduce"),
    (["--scheme", "hierarchical", "--workers", "4"], "without racks is plain all-reduce"),
    (["--scheme", "hierarchical", "--workers", "3", "--racks", "0,1/2", "--boundary-timeout", "60"],
     "shorter than 2 x --timeout (300 s)"),
    (["--scheme", "gossip", "--workers", "3", "--timeout", "20", "--boundary-timeout", "30"],
     "give --boundary-timeout >= 40"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=[" ".join(a[1:]) for a, _ in REFUSED])
def test_settings_that_turn_a_scheme_into_another_are_refused(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--model", "mlp", "--dataset", "synthetic", "--run-dir", str(tmp_path)])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no rank started, no run folder


WARNED = [
    (["--scheme", "partial", "--workers", "4", "--group-min", "4"], "p = n = 4"),
    (["--scheme", "ssp", "--workers", "4", "--ssp-bound", "0"], "BSP's timing"),
    (["--scheme", "dssync", "--workers", "4", "--racks", "0,1,2,3"], "flat all-reduce"),
    (["--scheme", "asp", "--workers", "1"], "single-worker SGD"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), WARNED, ids=[" ".join(a[1:]) for a, _ in WARNED])
def test_settings_a_user_may_mean_are_warned_about(argv: list[str], message: str) -> None:
    cfg, _ = parse([*argv, "--model", "mlp", "--dataset", "synthetic"])
    assert any(message in caveat for caveat in cfg.caveats())


def test_the_default_group_size_is_at_least_two() -> None:
    for workers, p in ((2, 2), (4, 2), (7, 2), (10, 3), (20, 6)):
        cfg, _ = parse(["--scheme", "partial", "--workers", str(workers), "--model", "mlp",
                        "--dataset", "synthetic"])  # fmt: skip
        assert cfg.reduce.group_min(workers) == p  # type: ignore[attr-defined]
        assert cfg.caveats() == ([f"partial reduce with p = n = {p}: every group waits for all "
                                  "workers (an all-reduce with staleness weights)"]
                                 if p == workers else [])  # fmt: skip


def test_the_boundary_timeout_follows_the_timeout_unless_given() -> None:
    base = ["--workers", "3", "--racks", "0,1/2", "--model", "mlp", "--dataset", "synthetic"]
    cfg, _ = parse(["--scheme", "hierarchical", *base])
    assert cfg.boundary_wait_s == 3 * 300.0  # type: ignore[attr-defined]
    cfg, _ = parse(["--scheme", "hierarchical", *base, "--timeout", "10"])
    assert cfg.boundary_wait_s == 30.0  # type: ignore[attr-defined]
    cfg, _ = parse(["--scheme", "hierarchical", *base, "--timeout", "10", "--boundary-timeout",
                    "25"])  # fmt: skip
    assert cfg.boundary_wait_s == 25.0  # type: ignore[attr-defined]

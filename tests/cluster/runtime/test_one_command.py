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
from fl_r2sp.cluster.runtime.cli import parse
from fl_r2sp.cluster.runtime.common.job import EXIT_TIMEOUT
from fl_r2sp.cluster.telemetry import read_rows

#: Seconds after which a wait gives up (a hang, not a timing assertion).
HANG_S = 400.0
JOB = ["--model", "mlp", "--dataset", "synthetic", "--batch-size", "8", "--timeout", "5",
       "--run-timeout", "150", "--seed", "3"]  # fmt: skip


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


PS = ["--servers", "1", "--iterations", "40", "--delays", "0.1,0.1,0.1"]
REDUCE = ["--iterations", "40", "--delays", "0.1,0.1,0.1", "--ready-timeout", "10"]
DSSYNC = ["--delays", "0.1,0.1,0.1", "--boundary-timeout", "15"]
# The baselines have no --regroup-period: rows reach workers.csv at the paper's period boundary
# (iteration 100), the kill follows, and the last boundary drops the lost worker.
BASELINE = [*DSSYNC, "--iterations", "150"]
#: scheme, its flags (3 workers), expected exit status
KILLS = [
    ("asp", PS, 0),
    ("r2sp", PS, 0),
    ("r2sp", [*PS, "--r2sp-push-order", "permission"], 0),
    ("ssp", [*PS, "--ssp-bound", "2"], 0),
    ("safa", PS, 0),
    ("bsp", PS, 1),
    ("osp", [*PS, "--momentum", "0"], 1),
    ("selective", REDUCE, 0),
    ("partial", REDUCE, 0),
    ("dssync", [*DSSYNC, "--iterations", "40", "--racks", "0,1/2", "--regroup-period", "2"], 0),
    ("hierarchical", [*BASELINE, "--racks", "0,1/2"], 0),
    ("gossip", BASELINE, 0),
]  # fmt: skip


#: Cases over a minute on the loaded 2-core machine (150 iterations, two boundaries; measured
#: gossip 73 s, hierarchical 56–80 s).
SLOW = {"gossip", "hierarchical"}


@pytest.mark.parametrize(
    ("scheme", "flags", "status"),
    [
        pytest.param(scheme, flags, status, id=scheme + "-permission" * ("permission" in flags),
                     marks=[pytest.mark.slow] if scheme in SLOW else [])
        for scheme, flags, status in KILLS
    ],
)  # fmt: skip
def test_a_killed_worker_ends_the_run_by_the_schemes_rule(
    tmp_path: Path, scheme: str, flags: list[str], status: int
) -> None:
    t0 = time.monotonic()
    proc = _start(tmp_path, scheme, "--workers", "3", *flags)
    run_dir, ranks = _until("run.json names the ranks", proc, lambda: _roster(tmp_path))
    victim = next(r for r in ranks if r.get("worker") == 1 and r["rank"] != 0)
    _until("two iterations of worker 1", proc, lambda: _iterations(run_dir, 3)[1] >= 2)
    os.kill(victim["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=HANG_S)
    summary = json.loads((run_dir / "summary.json").read_text())
    done = _iterations(run_dir, 3)
    print(f"\nKILL {scheme} rank {victim['rank']} exit {proc.returncode} status "
          f"{summary['status']} iterations {done} {time.monotonic() - t0:.0f}s")  # fmt: skip
    assert proc.returncode == status, err[-3000:]
    assert len(ranks) == (4 if "--servers" in flags else 3)
    assert {(r["rank"], r["role"]) for r in ranks} >= {(victim["rank"], "worker")}
    for name in ("config.json", "run.json", "workers.csv", "permissions.csv", "COMPLETE"):
        assert (run_dir / name).is_file(), name
    if status == 0:  # every family draws the worker phases on a normal end
        assert (run_dir / "gantt.png").is_file()
    assert json.loads((run_dir / "run.json").read_text())["ranks"] == ranks  # kept at the end
    if status == 0:
        assert summary["status"] == "ok" and summary["reason"]
        assert "1" in [str(w) for w in summary["lost_workers"]]
        assert done[1] < max(done)  # the others went on without it
    else:
        assert summary["status"] == "failed"
        assert f"worker 1 (rank {victim['rank']}) lost" in err
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


@pytest.mark.parametrize(("scheme", "flags"), [
    ("asp", ["--servers", "1", "--delays", "0.1,0.1"]),
    ("partial", ["--delays", "0.1,0.1", "--ready-timeout", "10"]),
    # DS-Sync has no clock of its own: its ranks' watchdog ends it WATCHDOG_GRACE_S past the limit.
    pytest.param("dssync", ["--racks", "0/1", "--delays", "0.1,0.1"], marks=pytest.mark.slow),
], ids=["asp", "partial", "dssync"])  # fmt: skip
def test_the_run_timeout_ends_as_timeout(tmp_path: Path, scheme: str, flags: list[str]) -> None:
    # The last --run-timeout wins over JOB's.
    proc = _start(tmp_path, scheme, "--workers", "2", "--iterations", "100000", *flags,
                  "--run-timeout", "3")  # fmt: skip
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == EXIT_TIMEOUT, err[-3000:]
    run_dir = next(tmp_path.glob("*/summary.json")).parent
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "timeout"
    assert "--run-timeout 3 s" in summary["reason"]
    assert read_rows(run_dir / "workers.csv")  # it ran before the limit


REFUSED = [
    (["--scheme", "partial", "--workers", "4", "--group-min", "9"], "exceeds the 4 workers"),
    (["--scheme", "selective", "--workers", "4", "--group-min", "1"], "never synchronises"),
    (["--scheme", "partial", "--workers", "1"], "never synchronises"),
    (["--scheme", "selective", "--workers", "4", "--full-sync-every", "1"], "full all-reduce"),
    (["--scheme", "dssync", "--workers", "4"], "without racks is plain all-reduce"),
    (["--scheme", "hierarchical", "--workers", "4"], "without racks is plain all-reduce"),
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

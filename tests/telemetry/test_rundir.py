"""Run directories: unique names, atomic files, the completion marker written last."""

from __future__ import annotations

import csv
import json
import os
import signal

import numpy as np
import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server import run_files
from fl_r2sp.fl.server.run_output import RunOutput
from fl_r2sp.fl.server.runner import run
from fl_r2sp.telemetry.eventlog import EventLog
from fl_r2sp.telemetry.rundir import (
    FILE_MODE,
    MARKER,
    atomic_write_text,
    complete_run_dirs,
    is_complete,
    reserve_run_dir,
    staged,
)


def small_output() -> RunOutput:
    return RunOutput(
        np.arange(3, dtype=np.float32),
        [{"version": 1, "time": 0.5}],
        {"stopped": "done", "global_updates": 1},
        EventLog(),
    )


def test_reserve_gives_each_caller_its_own_folder(tmp_path) -> None:
    names = [reserve_run_dir(tmp_path, "r").name for _ in range(3)]
    assert names == ["r", "r-2", "r-3"]
    with pytest.raises(ValueError, match="plain"):
        reserve_run_dir(tmp_path, "../escape")


def test_two_runs_finishing_in_the_same_second_get_two_folders(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(run_files.time, "strftime", lambda fmt: "20250101-000000")
    cfg_a = RunConfig(run_dir=str(tmp_path), timing_only=True, plots=False, seed=1)
    cfg_b = cfg_a.replace(lr=0.5)
    a = run_files.write_run_dir(cfg_a, small_output())
    b = run_files.write_run_dir(cfg_b, small_output())
    assert (a.name, b.name) == (
        "fl-r2sp-digits-s1-20250101-000000",
        "fl-r2sp-digits-s1-20250101-000000-2",
    )
    assert json.loads((a / "config.json").read_text())["config"]["lr"] == 0.1
    assert json.loads((b / "config.json").read_text())["config"]["lr"] == 0.5
    assert complete_run_dirs(tmp_path) == [a, b]
    marker = json.loads((a / MARKER).read_text())
    assert {
        "config.json",
        "summary.json",
        "history.csv",
        "weights.npy",
        "jobs.csv",
        "records.jsonl",
    } <= set(marker["files"])


def test_a_kill_while_writing_leaves_no_complete_folder(tmp_path, monkeypatch) -> None:
    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing the events")

    monkeypatch.setattr(EventLog, "write", killed)
    cfg = RunConfig(run_dir=str(tmp_path), timing_only=True, plots=False)
    with pytest.raises(KeyboardInterrupt):
        run_files.write_run_dir(cfg, small_output(), run_name="r")
    folder = tmp_path / "r"
    assert not is_complete(folder)
    assert complete_run_dirs(tmp_path) == []
    assert json.loads((folder / "summary.json").read_text())["summary"]["status"] == "interrupted"
    # What was written is whole (no temporary file or staging folder is left behind).
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "history.csv",
        "summary.json",
        "weights.npy",
    ]


def test_atomic_write_keeps_the_old_content_when_interrupted(tmp_path, monkeypatch) -> None:
    path = atomic_write_text(tmp_path / "f.txt", "old")

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_staged_moves_files_only_on_success(tmp_path) -> None:
    with staged(tmp_path) as stage:
        (stage / "a.csv").write_text("1")
    with pytest.raises(RuntimeError), staged(tmp_path) as stage:
        (stage / "b.csv").write_text("half")
        raise RuntimeError("writer failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


def test_run_writes_a_marked_folder(tmp_path) -> None:
    cfg = RunConfig(
        run_dir=str(tmp_path),
        timing_only=True,
        plots=False,
        num_partitions=4,
        num_groups=2,
        local_iterations=2,
        max_updates=2,
        network="lan",
    )
    first = run(cfg, progress=False, run_name="same").run_dir
    second = run(cfg, progress=False, run_name="same").run_dir
    assert (first.name, second.name) == ("same", "same-2")
    assert is_complete(first) and is_complete(second)


def test_summary_says_completed_only_beside_the_marker(tmp_path, monkeypatch) -> None:
    seen: list[tuple[str, bool]] = []
    original = run_files.atomic_write_json

    def watched(path, obj):
        if path.name == "summary.json":
            seen.append((obj["summary"]["status"], is_complete(path.parent)))
        return original(path, obj)

    monkeypatch.setattr(run_files, "atomic_write_json", watched)
    cfg = RunConfig(run_dir=str(tmp_path), timing_only=True, plots=False)
    out = small_output()
    out.summary["status"] = "completed"
    folder = run_files.write_run_dir(cfg, out, run_name="r")
    assert seen == [("interrupted", False), ("completed", True)]  # the real summary last
    assert json.loads((folder / MARKER).read_text())["status"] == "completed"


#: A wall-clock run of short jobs (the deployment case: jobs are out while the loop runs).
WALL = {"clock": "wall", "delay": "constant(value=0.01)"}


def _small_run(tmp_path, **kw) -> RunConfig:
    return RunConfig(
        run_dir=str(tmp_path), timing_only=True, num_partitions=6, num_groups=2,
        local_iterations=2, max_updates=12, **kw,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_run_says_so_and_files_its_jobs_in_flight(tmp_path, monkeypatch, how):
    from fl_r2sp.fl.server.loop_base import LoopBase

    original = LoopBase.model_updated

    def interrupt_at_4(self, now, d):
        original(self, now, d)
        if d.version == 4:
            if how == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
            raise KeyboardInterrupt("ctrl-c")

    monkeypatch.setattr(LoopBase, "model_updated", interrupt_at_4)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM" if how == "sigterm" else "ctrl-c"):
        run(_small_run(tmp_path, plots=False, **WALL), progress=False, run_name="r")
    folder = tmp_path / "r"
    assert not is_complete(folder)
    s = json.loads((folder / "summary.json").read_text())["summary"]
    assert s["status"] == "interrupted" and "interrupted" in s["failure"]
    assert s["global_updates"] == 4 and s["jobs_in_flight"] > 0
    with open(folder / "jobs.csv") as fh:
        rows = list(csv.DictReader(fh))
    ledger = s["updates_accepted"] + sum(s["updates_rejected"].values())
    ledger += sum(s["jobs_dropped"].values()) + s["jobs_in_flight"]
    assert ledger == len(rows)
    assert sum(r["in_flight"] == "True" for r in rows) == s["jobs_in_flight"]


def test_a_run_whose_loop_raises_leaves_a_failed_folder_and_re_raises(tmp_path, monkeypatch):
    """A crash mid-run (here a bug at the 4th global update) used to leave no folder at all:
    now the folder of what ran is written, ``failed`` with the exception named, complete (a
    finished record of a failed run), and the exception still reaches the caller."""
    from fl_r2sp.fl.server.loop_base import LoopBase

    original = LoopBase.model_updated

    def crash_at_4(self, now, d):
        original(self, now, d)
        if d.version == 4:
            raise ValueError("a bug in the aggregation")

    monkeypatch.setattr(LoopBase, "model_updated", crash_at_4)
    with pytest.raises(ValueError, match="a bug in the aggregation"):
        run(_small_run(tmp_path, plots=False, **WALL), progress=False, run_name="r")
    folder = tmp_path / "r"
    assert is_complete(folder)
    s = json.loads((folder / "summary.json").read_text())["summary"]
    assert s["status"] == "failed"
    assert s["failure"] == "the server loop raised ValueError: a bug in the aggregation"
    assert s["global_updates"] == 4
    with open(folder / "jobs.csv") as fh:
        rows = list(csv.DictReader(fh))
    ledger = s["updates_accepted"] + sum(s["updates_rejected"].values())
    ledger += sum(s["jobs_dropped"].values()) + s["jobs_in_flight"]
    assert ledger == len(rows)


def test_every_file_of_a_run_folder_has_one_mode(tmp_path) -> None:
    folder = run(_small_run(tmp_path, plots=True), progress=False).run_dir
    modes = {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()}
    assert len(modes) > 10 and set(modes.values()) == {FILE_MODE}, modes

"""Run directories: unique names, atomic files, the completion marker written last."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from fl_r2sp.config import RunConfig
from fl_r2sp.server import run_files
from fl_r2sp.server.run_output import RunOutput
from fl_r2sp.server.runner import run
from fl_r2sp.telemetry.eventlog import EventLog
from fl_r2sp.telemetry.rundir import (
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

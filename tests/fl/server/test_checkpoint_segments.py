"""Segments of a checkpoint's growing containers: a save writes only what changed; shared
entries stay shared; a crash mid-save leaves the previous checkpoint whole; a damaged or
missing segment is refused naming its file; a resumed virtual run stays bit-identical."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server import checkpoint, checkpoint_segments
from fl_r2sp.fl.server.checkpoint_archive import CheckpointError
from fl_r2sp.fl.server.checkpoint_segments import FOLDER, SegmentReader, SegmentWriter
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.state_codec import decode
from fl_r2sp.telemetry.rundir import is_complete
from tests.fl.server.test_checkpoint import Killed, evals, kill_after_save, only_dir, training_cfg


@pytest.fixture(autouse=True)
def small_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Containers of 8 entries or more are logs (small runs then have some)."""
    monkeypatch.setattr(checkpoint_segments, "LOG_MIN", 8)


def save(writer: SegmentWriter, state: Any) -> tuple[Any, list[np.ndarray], dict[str, Any]]:
    """What Checkpointer.save does with the writer, the head kept in memory (as JSON)."""
    tree, arrays, logs, segment = writer.encode(state)
    if segment is not None:
        writer.folder.mkdir(exist_ok=True)
        (writer.folder / logs["segments"][-1]["file"]).write_bytes(segment)
    writer.commit()
    return json.loads(json.dumps(tree)), arrays, json.loads(json.dumps(logs))


def load(directory: Path, head: tuple[Any, list[np.ndarray], dict[str, Any]]) -> Any:
    tree, arrays, logs = head
    return decode(tree, arrays, SegmentReader(directory, logs).resolve)


def event_state(n: int) -> dict[str, Any]:
    """An event-log-like state: rows in a list, the same rows in dicts, a trace of arrays."""
    rows = [{"cid": i % 4, "job": i, "t": float(i)} for i in range(n)]
    return {
        "jobs": rows,
        "open": {(r["cid"], r["job"]): r for r in rows},
        "last": {r["cid"]: r for r in rows},  # 4 entries: stays in the head
        "trace": [np.full(2, float(i)) for i in range(n)],
        "weights": np.arange(5.0),
    }


def test_a_save_writes_only_new_and_changed_entries_and_sharing_survives(tmp_path) -> None:
    writer = SegmentWriter(tmp_path)
    state = event_state(20)
    save(writer, state)
    first = writer.stored
    assert first == 60  # 20 rows + 20 open entries + 20 trace arrays
    state["jobs"][3]["t"] = -1.0  # a row that changed (in two logs: the list and the dict)
    for i in range(20, 24):
        row = {"cid": i % 4, "job": i, "t": float(i)}
        state["jobs"].append(row)
        state["open"][(row["cid"], row["job"])] = row
        state["last"][row["cid"]] = row
    head = save(writer, state)
    assert writer.stored - first == (1 + 4) * 2  # jobs and open: row 3 and 4 new; trace: none
    assert len(head[2]["segments"]) == 2
    back = load(tmp_path, head)
    assert back["jobs"] == state["jobs"] and back["jobs"][3]["t"] == -1.0
    assert all(back["open"][(r["cid"], r["job"])] is r for r in back["jobs"])
    assert all(back["last"][c] is back["jobs"][20 + c] for c in range(4))
    assert [a.tolist() for a in back["trace"]] == [a.tolist() for a in state["trace"]]


def test_segments_are_compacted_when_they_hold_mostly_stale_entries(tmp_path) -> None:
    writer = SegmentWriter(tmp_path)
    state = {"trace": [np.zeros(2) for _ in range(10)]}
    save(writer, state)
    for k in range(3):  # every entry replaced: the segments hold 2x, 3x ... the live ones
        state["trace"] = [np.full(2, float(k)) for _ in range(10)]
        head = save(writer, state)
    assert len(head[2]["segments"]) == 1  # one segment with every entry, the others deleted
    assert [p.name for p in (tmp_path / FOLDER).iterdir()] == [head[2]["segments"][0]["file"]]
    assert [a.tolist() for a in load(tmp_path, head)["trace"]] == [[2.0, 2.0]] * 10


def test_a_container_of_objects_stays_in_the_head(tmp_path) -> None:
    writer = SegmentWriter(tmp_path)
    state = {"policies": [RunConfig() for _ in range(10)], "rows": [[i] for i in range(10)]}
    head = save(writer, state)
    assert [g["length"] for g in head[2]["logs"].values()] == [10]  # only "rows"
    back = load(tmp_path, head)
    assert back["rows"] == state["rows"] and back["policies"] == state["policies"]


def job_log(out: Any) -> list[dict[str, Any]]:
    """The job rows without ``_prev`` (a link to the previous row, gone once dispatched)."""
    return [{k: v for k, v in r.items() if k != "_prev"} for r in out.events.jobs]


def test_resume_from_segments_is_bit_identical(tmp_path, monkeypatch) -> None:
    whole = run(training_cfg(tmp_path / "whole"), progress=False)
    cfg = training_cfg(tmp_path / "ckpt", checkpoint_every=2)
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=6)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    folder = only_dir(tmp_path / "ckpt")
    note = json.loads((folder / checkpoint.CHECKPOINT_NOTE).read_text())
    assert note["version"] == 6 and note["segments"] >= 2  # appended, not rewritten
    resumed = run(cfg.replace(resume_from=str(folder)), progress=False)
    assert is_complete(folder) and resumed.weights.tobytes() == whole.weights.tobytes()
    assert evals(resumed) == evals(whole)
    assert job_log(resumed) == job_log(whole)


def crash_in_save(monkeypatch, at_version: int, target: str) -> None:
    """Make the save of ``at_version`` die while it writes ``target`` (a file name prefix)."""
    original = checkpoint.atomic_write_bytes
    real_save = checkpoint.Checkpointer.save

    def save_watching(self, loop):
        def write(path, data):
            if loop.policy.version >= at_version and Path(path).name.startswith(target):
                Path(path).with_name(f".tmp-{Path(path).name}").write_bytes(data[:100])
                raise Killed(f"killed while writing {path}")
            return original(path, data)

        monkeypatch.setattr(checkpoint, "atomic_write_bytes", write)
        return real_save(self, loop)

    monkeypatch.setattr(checkpoint.Checkpointer, "save", save_watching)


@pytest.mark.parametrize("target", ["segment-", "checkpoint.npz"])
def test_a_crash_mid_save_leaves_the_previous_checkpoint_resumable(
    tmp_path, monkeypatch, target
) -> None:
    whole = run(training_cfg(tmp_path / "whole"), progress=False)
    cfg = training_cfg(tmp_path / "ckpt", checkpoint_every=2)
    with monkeypatch.context() as m:
        crash_in_save(m, 6, target)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    folder = only_dir(tmp_path / "ckpt")
    assert json.loads((folder / checkpoint.CHECKPOINT_NOTE).read_text())["version"] == 4
    resumed = run(cfg.replace(resume_from=str(folder)), progress=False)
    assert resumed.weights.tobytes() == whole.weights.tobytes()
    assert job_log(resumed) == job_log(whole)


def spoil_segment(folder: Path, how: str) -> Path:
    path = sorted((folder / FOLDER).glob("segment-*.npz"))[0]
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:  # another save's segment under the listed name
        from fl_r2sp.fl.server.checkpoint_archive import archive

        path.write_bytes(archive(checkpoint_segments.KIND, {}, [], [])[0])
    return path


@pytest.mark.parametrize(
    ("how", "words"),
    [("missing", "missing"), ("truncated", "truncated"), ("foreign", "not the segment")],
)
def test_a_spoiled_segment_is_refused_naming_its_file(tmp_path, monkeypatch, how, words) -> None:
    cfg = training_cfg(tmp_path, checkpoint_every=2, timing_only=True, dropout="none")
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=4)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    path = spoil_segment(only_dir(tmp_path), how)
    with pytest.raises(CheckpointError) as err:
        run(cfg.replace(resume_from=str(only_dir(tmp_path))), progress=False)
    assert str(path) in str(err.value) and words in str(err.value)

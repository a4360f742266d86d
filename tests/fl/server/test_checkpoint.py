"""Checkpoint and resume: a virtual run killed after a checkpoint ends bit-identical."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server import checkpoint
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.state_codec import CodecError, decode, encode
from fl_r2sp.telemetry.rundir import is_complete


class Killed(BaseException):
    """Stands for SIGKILL right after a checkpoint (BaseException: nothing catches it)."""


def kill_after_save(monkeypatch, at_version: int) -> None:
    """Make the checkpointer 'kill' the run right after it saved version ``at_version``."""
    original = checkpoint.Checkpointer.save

    def save_then_die(self, loop):
        path = original(self, loop)
        if loop.policy.version >= at_version:
            raise Killed(f"killed after the checkpoint of update {loop.policy.version}")
        return path

    monkeypatch.setattr(checkpoint.Checkpointer, "save", save_then_die)


def only_dir(parent):
    (folder,) = [p for p in parent.iterdir() if p.is_dir()]
    return folder


def training_cfg(tmp_path, **kw) -> RunConfig:
    base = dict(
        dataset="digits",
        num_partitions=6,
        num_groups=2,
        local_iterations=3,
        max_updates=8,
        eval_every=2,
        plots=False,
        run_dir=str(tmp_path),
        dropout="bernoulli(p=0.2,down=0.5)",
        job_timeout=60.0,
    )
    base.update(kw)
    return RunConfig(**base)


def evals(out) -> list[tuple]:
    return [(h["version"], h["time"], h["loss"], h["accuracy"]) for h in out.history]


@pytest.mark.parametrize("strategy", ["fl-r2sp", "fedbuff"])
def test_killed_and_resumed_virtual_run_ends_bit_identical(tmp_path, monkeypatch, strategy):
    extra = {"buffer_size": 2} if strategy == "fedbuff" else {}
    whole = run(training_cfg(tmp_path / "whole", strategy=strategy, **extra), progress=False)

    cfg = training_cfg(tmp_path / "ckpt", strategy=strategy, checkpoint_every=3, **extra)
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=3)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    folder = only_dir(tmp_path / "ckpt")
    assert not is_complete(folder)
    assert json.loads((folder / checkpoint.CHECKPOINT_NOTE).read_text())["version"] == 3

    resumed = run(cfg.replace(resume_from=str(folder)), progress=False)
    assert resumed.run_dir == folder and is_complete(folder)
    assert resumed.weights.tobytes() == whole.weights.tobytes()
    assert evals(resumed) == evals(whole)
    assert resumed.summary["global_updates"] == whole.summary["global_updates"] == 8
    strip = [{k: v for k, v in r.items() if k != "_prev"} for r in whole.events.jobs]
    assert [{k: v for k, v in r.items() if k != "_prev"} for r in resumed.events.jobs] == strip
    assert resumed.summary["replies_received"] == whole.summary["replies_received"]


def test_checkpoints_go_every_k_updates_and_the_last_one_stays(tmp_path, monkeypatch) -> None:
    saved: list[int] = []
    original = checkpoint.Checkpointer.save
    monkeypatch.setattr(
        checkpoint.Checkpointer,
        "save",
        lambda self, loop: saved.append(loop.policy.version) or original(self, loop),
    )
    cfg = training_cfg(tmp_path, timing_only=True, dropout="none", checkpoint_every=3)
    out = run(cfg, progress=False)
    assert saved == [3, 6]  # 8 updates: none at the final one (the results are written then)
    assert is_complete(out.run_dir)
    note = json.loads((out.run_dir / checkpoint.CHECKPOINT_NOTE).read_text())
    assert (note["version"], note["resumes"]) == (6, 0)


def test_wall_clock_run_resumes_with_every_update_and_its_history(tmp_path, monkeypatch) -> None:
    cfg = RunConfig(
        strategy="fl-r2sp",
        clock="wall",
        timing_only=True,
        num_partitions=4,
        num_groups=2,
        local_iterations=2,
        delay="constant(value=0.01)",
        max_updates=6,
        eval_every=1,
        plots=False,
        run_dir=str(tmp_path),
        checkpoint_every=2,
    )
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=4)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    folder = only_dir(tmp_path)
    out = run(cfg.replace(resume_from=str(folder)), progress=False)
    assert out.summary["global_updates"] == 6
    assert [h["version"] for h in out.history] == [0, 1, 2, 3, 4, 5, 6]
    times = [h["time"] for h in out.history]
    assert times == sorted(times)  # the clock continued from the checkpoint's reading
    jobs = [(r["cid"], r["job"]) for r in out.events.jobs]
    assert len(jobs) == len(set(jobs))  # job indices continued, none reused for new work
    assert is_complete(folder)


def test_resume_refuses_other_settings_finished_runs_and_missing_checkpoints(
    tmp_path, monkeypatch
) -> None:
    cfg = training_cfg(tmp_path, timing_only=True, dropout="none", checkpoint_every=2)
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=2)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    folder = only_dir(tmp_path)
    with pytest.raises(ValueError, match=r"num-groups=3 \(checkpoint: 2\)"):
        run(cfg.replace(num_groups=3, resume_from=str(folder)), progress=False)
    with pytest.raises(FileNotFoundError, match="no checkpoint.npz"):
        run(cfg.replace(resume_from=str(tmp_path)), progress=False)
    # Output and executor keys may change.
    done = run(cfg.replace(resume_from=str(folder), plots=True, checkpoint_every=0), progress=False)
    assert done.summary["global_updates"] == 8
    with pytest.raises(ValueError, match="completed"):
        run(cfg.replace(resume_from=str(folder)), progress=False)


def test_config_checks_the_checkpoint_keys() -> None:
    with pytest.raises(ValueError, match="checkpoint-every"):
        RunConfig(checkpoint_every=-1).validate()
    with pytest.raises(ValueError, match="fedavg"):
        RunConfig(strategy="fedavg", checkpoint_every=5).validate()


@pytest.fixture
def killed_run(tmp_path, monkeypatch) -> tuple[RunConfig, Path]:
    """A timing run killed right after its checkpoint of update 2: (config, its folder)."""
    cfg = training_cfg(tmp_path, timing_only=True, dropout="none", checkpoint_every=2)
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=2)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    return cfg, only_dir(tmp_path)


def _rewrite(path: Path, change) -> None:
    """Rewrite the archive at ``path`` with ``change(members)`` applied (header kept unless set)."""
    with np.load(path) as npz:
        members = {k: npz[k] for k in npz.files}
    change(members)
    np.savez(path, **members)


def _json_member(members: dict, name: str, edit) -> None:
    doc = json.loads(members[name].tobytes())
    edit(doc)
    members[name] = np.frombuffer(json.dumps(doc).encode(), np.uint8)


def _bad_files() -> dict:
    """Ways to spoil a checkpoint -> the words its refusal must contain."""
    return {
        "empty": (lambda p: p.write_bytes(b""), "empty file"),
        "truncated": (
            lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
            "truncated",
        ),
        "random": (lambda p: p.write_bytes(os.urandom(4096).replace(b"\x80", b"\x81")), "foreign"),
        "pickle": (lambda p: p.write_bytes(pickle.dumps({"format": 1})), "pickle"),
        "foreign-npz": (lambda p: np.savez(p, x=np.zeros(3)), "foreign .npz"),
        "other-format": (
            lambda p: _rewrite(
                p, lambda m: _json_member(m, "header", lambda h: h.update(format=1))
            ),
            "format 1",
        ),
        "altered": (
            lambda p: _rewrite(
                p, lambda m: _json_member(m, "state", lambda s: s.update(resumes=7))
            ),
            "does not match",
        ),
    }


@pytest.mark.parametrize("fault", sorted(_bad_files()))
def test_a_spoiled_checkpoint_is_refused_naming_the_file_and_the_fault(killed_run, fault) -> None:
    cfg, folder = killed_run
    path = folder / checkpoint.CHECKPOINT
    spoil, words = _bad_files()[fault]
    spoil(path)
    with pytest.raises(checkpoint.CheckpointError) as err:
        run(cfg.replace(resume_from=str(folder)), progress=False)
    assert str(path) in str(err.value) and words in str(err.value)


def test_a_checkpoint_of_another_configuration_names_the_file_and_the_keys(killed_run) -> None:
    cfg, folder = killed_run
    with pytest.raises(checkpoint.CheckpointError) as err:
        run(cfg.replace(lr=0.5, resume_from=str(folder)), progress=False)  # was 0.1
    message = str(err.value)
    assert str(folder / checkpoint.CHECKPOINT) in message and "another configuration" in message
    assert "lr=0.5 (checkpoint: 0.1)" in message


def test_an_old_pickle_checkpoint_is_refused_unread(killed_run, monkeypatch) -> None:
    cfg, folder = killed_run
    (folder / checkpoint.CHECKPOINT).unlink()
    legacy = folder / checkpoint.LEGACY_CHECKPOINT
    legacy.write_bytes(pickle.dumps({"format": 1}))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("the pickle was read"))
    with pytest.raises(checkpoint.CheckpointError, match=f"{legacy}: a Python pickle"):
        run(cfg.replace(resume_from=str(folder)), progress=False)


@pytest.mark.parametrize("strategy", ["bsp", "asp", "fedasync"])
def test_every_scheme_state_survives_the_round_trip(tmp_path, monkeypatch, strategy) -> None:
    cfg = training_cfg(tmp_path, strategy=strategy, checkpoint_every=3, max_updates=6)
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=3)
        with pytest.raises(Killed):
            run(cfg, progress=False)
    folder = only_dir(tmp_path)
    saved = checkpoint.load_checkpoint(cfg.replace(resume_from=str(folder)))
    _, state, arrays = checkpoint.read_checkpoint(folder / checkpoint.CHECKPOINT)
    again, again_arrays = encode(saved.payload["state"])
    assert again == state["loop"]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(again_arrays, arrays, strict=True))


@pytest.mark.parametrize(
    "node",
    [
        {"$object": "os:system", "attrs": []},
        {"$object": "builtins:eval", "attrs": []},
        {"$object": "fl_r2sp.fl.server.checkpoint:log", "attrs": []},
        {"$reduce": "os.system", "args": ["true"]},
    ],
)
def test_a_checkpoint_state_cannot_name_code_to_run(node) -> None:
    with pytest.raises(CodecError):
        decode({"root": {"$ref": 0}, "objects": [node]}, [])
    with pytest.raises(CodecError, match="refused"):
        decode({"root": {"$function": "os.system"}, "objects": []}, [])


def test_a_state_the_codec_cannot_store_is_refused_at_save_naming_where() -> None:
    with pytest.raises(CodecError, match=r"root\['cb'\]: instances of pathlib"):
        encode({"cb": Path(".")})


#: A run killed after its checkpoint at update 3, written by the layout before the federated
#: half moved to ``fl_r2sp/fl/`` (its state names ``fl_r2sp.strategies.flr2sp:FLR2SPPolicy``).
OLD_LAYOUT = Path(__file__).parent / "data" / "old_layout_checkpoint"


def old_layout_cfg(run_dir: Path) -> RunConfig:
    """The configuration the old-layout checkpoint was made with."""
    return training_cfg(
        run_dir, max_updates=6, dropout="none", checkpoint_every=3, outlier_filter=True
    )


def test_a_checkpoint_of_the_old_layout_resumes_to_the_same_end(tmp_path: Path) -> None:
    state = (OLD_LAYOUT / "checkpoint.npz").read_bytes()
    assert b"fl_r2sp.strategies.flr2sp:FLR2SPPolicy" in state  # the fixture is the old layout
    whole = run(old_layout_cfg(tmp_path / "whole"), progress=False)
    folder = tmp_path / "ck" / "old-layout"
    shutil.copytree(OLD_LAYOUT, folder)
    resumed = run(old_layout_cfg(tmp_path / "ck").replace(resume_from=str(folder)), progress=False)
    assert is_complete(folder)
    assert resumed.weights.tobytes() == whole.weights.tobytes()
    assert evals(resumed) == evals(whole)

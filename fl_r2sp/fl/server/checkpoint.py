"""Checkpoint a server loop's whole state; resume a run from it (``docs/architecture.md`` §9).

``checkpoint-every = k`` makes the loop save, each time the global version reaches a multiple
of k, its complete state into ``checkpoint.npz`` (and ``checkpoint-log/``) of the run
directory (atomically: temporary files, renames); ``resume-from = <run dir>`` rebuilds the run
from it and continues it in that folder. The state is the loop object itself, minus its
connections (transport, evaluator, handler table, checkpointer): global weights and policy
state (groups, EMA, streaks, blacklist, round tags, any generator a policy holds), the stop
rule, the admission gate, the job counters, the telemetry so far (event log, history), and per
clock

* **virtual**: the virtual clock, the event queue, the network model with its flows and
  traces, every job in virtual flight (with the replies already received), parked sends;
* **wall**: the clock reading, the timers, the jobs in flight, parked sends.

Saves happen between two events of the loop, never inside a policy reaction, so the state is
quiescent. Jobs whose reply was still missing are submitted again on resume, with the same
(partition id, job index, start weights); a client's reply is a pure function of those and the
seed (``clients/runtime.py``), so a resumed *virtual* run ends with bit-identical weights to an
uninterrupted one. A resumed *wall* run restores weights, policy state and telemetry and
re-sends the outstanding jobs to the live nodes; its timing (and hence what the policy
decides next) cannot repeat the lost run's, and its clock resumes from the checkpoint's
reading (the downtime is not on the time axis).

The checkpoint is ``checkpoint.npz``, the *head*: a NumPy archive
(:mod:`fl_r2sp.fl.server.checkpoint_archive`, read with ``allow_pickle=False``) holding a JSON
header (format version, the hash of the result-relevant run config, the hash of the
content), the state as JSON (:mod:`fl_r2sp.fl.server.state_codec`: only ``fl_r2sp`` classes are
rebuilt, nothing in the file can run code) and the state's arrays. The state's growing
containers (event log, history, finished flows ...) are not in the head: each save appends a
segment of what changed in them to ``checkpoint-log/``, which the head lists with their hashes
(:mod:`fl_r2sp.fl.server.checkpoint_segments`), so a save costs what changed, not the whole run.
A head or segment that is empty, missing, truncated, damaged, foreign, of another format or
from another configuration is refused with :class:`CheckpointError` naming the file and which
of these it is; the pickle checkpoints of older versions (``checkpoint.pkl``) are refused
unread. The last checkpoint stays in the folder after the run completes. Cost, measured:
see the README's "Checkpoint and resume" (``benchmarks/bench_checkpoint.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fl_r2sp.emulation.clock import WallClock
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server.checkpoint_archive import CheckpointError, archive, read_archive
from fl_r2sp.fl.server.checkpoint_segments import SegmentReader, SegmentWriter
from fl_r2sp.fl.server.loop_base import LoopBase
from fl_r2sp.fl.server.state_codec import CodecError, decode
from fl_r2sp.fl.server.virtual_loop import VirtualLoop
from fl_r2sp.fl.server.wall_loop import WallLoop
from fl_r2sp.telemetry.rundir import MARKER, atomic_write_bytes, atomic_write_json

log = logging.getLogger("fl_r2sp")

#: Checkpoint file in the run directory and its human-readable note.
CHECKPOINT = "checkpoint.npz"
CHECKPOINT_NOTE = "checkpoint.json"
#: The pickle checkpoint of versions before format 2 (refused, never read).
LEGACY_CHECKPOINT = "checkpoint.pkl"
#: The header's ``kind``: tells our archives from other ``.npz`` files.
KIND = "fl_r2sp-checkpoint"
#: Loop attributes rebuilt on resume rather than saved: connections and callables.
TRANSIENT = frozenset(
    {"transport", "evaluator", "on_evaluate", "_handlers", "progress", "checkpointer", "clock"}
)
#: Run-config keys that may differ between a checkpointed run and its resumption: they change
#: where files go and how jobs are computed, never a result.
RESUME_FREE = frozenset({
    "resume-from", "checkpoint-every", "run-dir", "plots", "data-dir", "download", "executor",
    "executor-workers", "executor-stack", "executor-conv", "executor-compile",
    "executor-cuda-graphs", "compute-device", "job-timeout", "job-timeout-factor", "node-manifest",
    "federated-eval-every",  # evaluation only: the trained weights do not depend on it
})  # fmt: skip


@dataclass
class Checkpointer:
    """Saves a loop's state into ``directory`` every ``every`` global updates.

    Parameters
    ----------
    directory : Path
        The run directory (exists).
    every : int
        Save when the version reaches a multiple of this (0 = never).
    config : dict
        The run config (kebab-case), stored with the state.
    clients : list of int
        Partition ids the run started with.
    resumes : int (default: 0)
        How many times this run was resumed so far.
    """

    directory: Path
    every: int
    config: dict[str, Any]
    clients: list[int]
    resumes: int = 0
    saved_version: int = field(default=-1, init=False)
    writer: SegmentWriter | None = field(default=None, init=False, repr=False)

    def maybe_save(self, loop: LoopBase) -> bool:
        """Save if the version reached a new multiple of ``every``; True if saved."""
        version = loop.policy.version
        if self.every <= 0 or version <= 0 or version == self.saved_version or version % self.every:
            return False
        self.save(loop)
        return True

    def save(self, loop: LoopBase) -> Path:
        """Write the loop's state now; return the checkpoint's path.

        The new segment (what changed in the state's growing containers) is written first,
        then the head replaces the old one atomically (the crash-safety argument is in
        :mod:`fl_r2sp.fl.server.checkpoint_segments`).
        """
        clock_now = loop.clock.now()
        loop_state = {k: v for k, v in vars(loop).items() if k not in TRANSIENT}
        if self.writer is None:
            self.writer = SegmentWriter(self.directory)
        tree, arrays, logs, segment = self.writer.encode(loop_state)
        if segment is not None:
            self.writer.folder.mkdir(exist_ok=True)
            atomic_write_bytes(self.writer.folder / logs["segments"][-1]["file"], segment)
        state = {
            "clock": loop.clock_name, "config": self.config, "clients": list(self.clients),
            "resumes": self.resumes, "clock_now": clock_now,
            "wall_elapsed": time.perf_counter() - loop._wall0, "loop": tree, "logs": logs,
        }  # fmt: skip
        data, _ = archive(KIND, {"config_hash": config_hash(self.config)}, state, arrays)
        path = atomic_write_bytes(self.directory / CHECKPOINT, data)
        self.writer.commit()
        note = {
            "version": loop.policy.version,
            "clock": loop.clock_name,
            "time": clock_now,
            "bytes": len(data),
            "segment_bytes": len(segment or b""),
            "segments": len(logs["segments"]),
            "resumes": self.resumes,
            "saved": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        atomic_write_json(self.directory / CHECKPOINT_NOTE, note)
        self.saved_version = loop.policy.version
        log.info(
            "checkpoint at update %d (%s t=%.2fs): %s",
            loop.policy.version,
            loop.clock_name,
            clock_now,
            path,
        )
        return path


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the run-config keys that change results (all but :data:`RESUME_FREE`)."""
    kept = {k: v for k, v in config.items() if k not in RESUME_FREE}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any], list[np.ndarray]]:
    """Header, JSON state and arrays of the head checkpoint at ``path``, checked against its
    hash (:func:`fl_r2sp.fl.server.checkpoint_archive.read_archive`).

    Raises
    ------
    CheckpointError
        Naming ``path`` and whether it is empty, a pickle, foreign, truncated or damaged,
        of another format, or altered since it was written.
    """
    return read_archive(path, KIND)


@dataclass(frozen=True)
class Saved:
    """A checkpoint read back: the run directory and the decoded payload."""

    directory: Path
    payload: dict[str, Any]

    @property
    def clients(self) -> list[int]:
        """Partition ids the checkpointed run started with."""
        return list(self.payload["clients"])


def load_checkpoint(cfg: RunConfig) -> Saved:
    """Read ``cfg.resume_from``'s checkpoint and check that ``cfg`` may continue it.

    Raises
    ------
    FileNotFoundError
        If the folder or its checkpoint is missing.
    CheckpointError
        If the file is empty, truncated, damaged, foreign, of another format, an old pickle,
        or from another configuration (the keys named with both values).
    ValueError
        If the run already completed.
    """
    directory = Path(cfg.resume_from)
    path = directory / CHECKPOINT
    if not path.is_file():
        legacy = directory / LEGACY_CHECKPOINT
        if legacy.is_file():
            raise CheckpointError(
                f"{legacy}: a Python pickle checkpoint of an older fl_r2sp; refused unread "
                "(reading a pickle can run code): resume it with the version that wrote it, "
                "or start the run again"
            )
        raise FileNotFoundError(
            f"resume-from={cfg.resume_from!r}: no {CHECKPOINT} there; pass the folder of a run "
            "that had checkpoint-every > 0"
        )
    if (directory / MARKER).exists():
        raise ValueError(f"resume-from={cfg.resume_from!r}: that run completed; nothing to resume")
    header, state, arrays = read_checkpoint(path)
    if header["config_hash"] != config_hash(cfg.to_run_config()):
        raise CheckpointError(f"{path}: from another configuration: {_differences(cfg, state)}")
    try:
        logs = SegmentReader(directory, state.pop("logs"))  # reads and checks the segments
        state["state"] = decode(state.pop("loop"), arrays, logs.resolve)
    except CheckpointError:
        raise
    except (CodecError, KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: damaged state ({exc})") from None
    return Saved(directory, state)


def _differences(cfg: RunConfig, saved: dict[str, Any]) -> str:
    """The result-relevant keys in which ``cfg`` differs from the checkpointed run's config."""
    now, then = cfg.to_run_config(), dict(saved.get("config") or {})
    diff = sorted(
        k for k in set(now) | set(then) if k not in RESUME_FREE and now.get(k) != then.get(k)
    )
    pairs = ", ".join(f"{k}={now.get(k)!r} (checkpoint: {then.get(k)!r})" for k in diff)
    return f"it differs in {pairs or 'its set of keys'}; resume with the same settings"


def check_clients(saved: Saved, clients: list[int]) -> None:
    """Raise ``ValueError`` if a partition of the checkpointed run is not connected now."""
    missing = sorted(set(saved.clients) - set(clients))
    if missing:
        raise ValueError(
            f"resume-from: partitions {missing} of the checkpointed run are not "
            "connected; start their SuperNodes (same partition-id) and retry"
        )


def restore(loop: LoopBase, saved: Saved) -> None:
    """Put the checkpointed state into a freshly built ``loop`` and re-send outstanding jobs.

    Raises
    ------
    ValueError
        If the checkpoint was written by the other clock's loop.
    """
    payload = saved.payload
    if payload["clock"] != loop.clock_name:
        raise ValueError(
            f"checkpoint is of a {payload['clock']}-clock run, this run's clock "
            f"is {loop.clock_name}"
        )
    vars(loop).update(payload["state"])
    loop._wall0 = time.perf_counter() - float(payload["wall_elapsed"])
    if isinstance(loop, VirtualLoop):
        _resubmit_virtual(loop, payload)
    elif isinstance(loop, WallLoop):
        _resubmit_wall(loop, payload)
    log.info(
        "resumed from %s at update %d (%s t=%.2fs)",
        saved.directory,
        loop.policy.version,
        loop.clock_name,
        payload["clock_now"],
    )


def _resubmit_virtual(loop: VirtualLoop, payload: dict[str, Any]) -> None:
    # The virtual clock is state (it is in TRANSIENT only because a wall clock is not).
    loop.clock.advance_to(float(payload["clock_now"]))
    # One submitted, unanswered job per node at most (the loop's invariant): send it again.
    for key in sorted(loop.unreplied):
        st = loop.unreplied[key]
        if st.submitted:
            st.sent = time.monotonic()
            loop.transport.submit(st.job)


def _resubmit_wall(loop: WallLoop, payload: dict[str, Any]) -> None:
    loop.clock = WallClock(start=float(payload["clock_now"]))
    now = loop.clock.now()
    for cid in sorted(loop.inflight):
        job, _ = loop.inflight[cid]
        loop.inflight[cid] = (job, now)  # its job timeout starts again
        loop.transport.submit(job)


def attach(
    cfg: RunConfig,
    loop: LoopBase,
    clients: list[int],
    saved: Saved | None,
    run_name: str | None = None,
) -> Path | None:
    """Give ``loop`` a checkpointer if the run checkpoints; return the run directory to finish.

    A resumed run continues in its own folder; a fresh run with ``checkpoint-every > 0``
    reserves its folder now (it must exist before the first save). Otherwise None: the
    folder is made when the results are written.
    """
    if saved is not None:
        check_clients(saved, clients)
        directory: Path | None = saved.directory
        resumes = int(saved.payload["resumes"]) + 1
        clients = saved.clients
    elif cfg.checkpoint_every > 0:
        from fl_r2sp.fl.server.run_files import default_run_name, mark_interrupted
        from fl_r2sp.telemetry.rundir import reserve_run_dir

        directory, resumes = reserve_run_dir(cfg.run_dir, run_name or default_run_name(cfg)), 0
        mark_interrupted(cfg, directory)  # what a kill before the end leaves
    else:
        return None
    assert directory is not None
    loop.checkpointer = Checkpointer(
        directory, cfg.checkpoint_every, cfg.to_run_config(), list(clients), resumes
    )
    return directory


def resume(loop: LoopBase, saved: Saved) -> np.ndarray:
    """Restore ``saved`` into ``loop`` and run it to its stop condition; the final weights."""
    restore(loop, saved)
    if loop.checkpointer is not None:
        loop.checkpointer.saved_version = loop.policy.version  # that state is on disk already
    assert isinstance(loop, VirtualLoop | WallLoop)
    return loop.run_events()

"""Follow a submitted Flower run to its real end: the SuperLink's status, not the log stream.

``flwr run --stream`` streams the ServerApp's log and exits when that stream ends; its exit
status says nothing about the run. The stream can end while the run still trains (seen in a
churn run on a loaded machine: ``flwr run`` exited 0, the ServerApp went on and its folder
was read half-way). The run's end is its status at the SuperLink, as Flower 1.42's
``flwr ls --run-id <id> --format json`` reports it: ``pending``, ``starting``, ``running``,
then ``finished:completed``, ``finished:failed`` or ``finished:stopped``.

:func:`follow_run` echoes the log until the SuperLink says the run finished; when a stream
ends before that it re-attaches with ``flwr log <run-id> --stream`` (which replays the log
from its start: the lines already seen are skipped). It gives up only when the run stops
progressing (:class:`ProgressWatch`: the allowed silence grows with the measured time between
progress lines, so a loaded machine only makes the wait longer) or at an optional deadline.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.processes import flwr_bin, stop_group

#: A global update as the ServerApp logs it (``[fl-r2sp] update 4/8 ...``).
UPDATE_LINE = re.compile(r"\] update \d+")
#: ``flwr run``'s line naming the run it submitted.
RUN_STARTED = re.compile(r"Successfully started run (\d+)")
#: The line ``flwr run --stream`` and ``flwr log --stream`` print before the run's log.
LOG_START = "Starting logstream for run_id"
#: Final statuses at the SuperLink start with this.
FINISHED = "finished"
#: The status of a run that ended well.
COMPLETED = "finished:completed"
#: Seconds a run gets past its own ``max-update-gap`` to stop and write its folder before a
#: watch gives up on it (:func:`watch_for`).
STOP_GRACE = 300.0


def watch_for(run_config: Mapping[str, Any]) -> ProgressWatch:
    """The watch of a deployed run of this app with ``run_config`` (kebab-case keys).

    The app fails a run itself when no global update came for ``max-update-gap`` seconds
    (default 1800), and waits up to ``node-wait`` (default 120) for its nodes at the start,
    silently; the watch must not be the tighter bound (a first round of 32 ClientApps
    starting on 2 cores took 267 s, 4x the start-up gap would have been less). So its floor is
    that gap and its start-up bound that wait (at least 600 s), each plus :data:`STOP_GRACE`
    to stop and write the run folder: it catches a run that cannot end (a hung ServerApp or
    SuperLink), and grows past the floor with the measured gaps.
    """
    defaults = RunConfig()
    gap = float(run_config.get("max-update-gap", defaults.max_update_gap))
    wait = float(run_config.get("node-wait", defaults.node_wait))
    return ProgressWatch(startup=max(600.0, wait + STOP_GRACE), floor=gap + STOP_GRACE)


class ProgressWatch:
    """How long a run may go without progress, derived from the progress measured so far.

    Before its first progress line a run may be silent (print no line at all) for
    ``startup`` s; afterwards it may go ``factor`` x the longest gap between progress lines
    seen so far (at least ``floor`` s) without a new one. The time from the start to the
    first progress line counts as the first gap: starting a SuperLink, nodes and a ServerApp
    is CPU-bound like a round, so the bound grows with the machine's measured slowness.

    Parameters
    ----------
    progress : re.Pattern (default: :data:`UPDATE_LINE`)
        What a progress line contains.
    startup : float (default: 600)
        Seconds of silence allowed before the first progress line.
    factor : float (default: 4)
        Multiple of the longest measured gap allowed afterwards.
    floor : float (default: 180)
        Least seconds allowed afterwards.
    clock : callable (default: time.monotonic)
        Seconds, monotonic.
    """

    def __init__(
        self,
        progress: re.Pattern[str] = UPDATE_LINE,
        startup: float = 600.0,
        factor: float = 4.0,
        floor: float = 180.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.progress, self.startup, self.factor, self.floor = progress, startup, factor, floor
        self.clock = clock
        self.last_line = self.last_progress = clock()  # the start counts as the first progress
        self.longest = 0.0
        self.seen_progress = False

    def saw(self, line: str) -> None:
        """Note a line of output (progress or not)."""
        self.last_line = self.clock()
        if self.progress.search(line):
            self.longest = max(self.longest, self.last_line - self.last_progress)
            self.seen_progress, self.last_progress = True, self.last_line

    def limit(self) -> float:
        """Seconds allowed without progress now."""
        return max(self.floor, self.factor * self.longest) if self.seen_progress else self.startup

    def remaining(self) -> float:
        """Seconds left before the run counts as stalled (0 or less: stalled)."""
        since = self.last_progress if self.seen_progress else self.last_line
        return self.limit() - (self.clock() - since)


@dataclass
class RunEnd:
    """How a followed run ended (:func:`follow_run`).

    Attributes
    ----------
    run_id : int or None
        The run ``flwr run`` submitted; None if it submitted none.
    exit_code : int or None
        ``flwr run``'s exit status; None if it was still running when the watch gave up.
    status : str or None
        The run's final status at the SuperLink (e.g. ``finished:completed``); None when
        not known to be finished (the watch gave up, or no run was submitted).
    gave_up : str or None
        Why the watch stopped waiting (no progress within its bound, or the deadline).
    reattached : int
        Log streams opened after ``flwr run``'s own ended early.
    """

    run_id: int | None = None
    exit_code: int | None = None
    status: str | None = None
    gave_up: str | None = None
    reattached: int = 0

    @property
    def completed(self) -> bool:
        """True if the SuperLink says the run finished and completed."""
        return self.status == COMPLETED

    def describe(self) -> str:
        """One line: the run, its status and how it was followed."""
        status = self.status or f"not finished ({self.gave_up or 'no run was submitted'})"
        return (
            f"run {self.run_id}: status {status} at the SuperLink; flwr run exit "
            f"{self.exit_code}; log streams re-attached {self.reattached}"
        )


class _Feed:
    """Lines of the current log stream, echoed and kept once each (a replayed log's lines
    already seen are skipped)."""

    _ENDED = object()

    def __init__(self, sink: list[str], echo: bool) -> None:
        self.sink, self.echo = sink, echo
        self.lines: queue.Queue[object] = queue.Queue()
        self.logged = 0  # log lines (after LOG_START) delivered so far, over all streams
        self.procs: list[subprocess.Popen[str]] = []

    def attach(self, proc: subprocess.Popen[str]) -> None:
        self.procs.append(proc)
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        in_log, index = False, 0
        for line in proc.stdout:
            if in_log:
                index += 1
                if index <= self.logged:
                    continue  # replayed
                self.logged = index
            in_log = in_log or LOG_START in line
            self.lines.put(line)
        self.lines.put(self._ENDED)

    def get(self, timeout: float) -> str | None | bool:
        """The next line; None if none came within ``timeout``; False if the stream ended."""
        try:
            item = self.lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if item is self._ENDED:
            return False
        assert isinstance(item, str)
        if self.echo:
            sys.stdout.write(item)
            sys.stdout.flush()
        self.sink.append(item)
        return item


def follow_run(
    proc: subprocess.Popen[str],
    reattach: Callable[[int], subprocess.Popen[str]],
    status_of: Callable[[int], str | None],
    sink: list[str],
    watch: ProgressWatch | None = None,
    deadline: float | None = None,
    poll: float = 5.0,
    echo: bool = True,
) -> RunEnd:
    """Follow ``proc`` (``flwr run --stream``) until the SuperLink says its run finished.

    Parameters
    ----------
    proc : subprocess.Popen
        The started ``flwr run --stream``, text output (stderr merged); the caller stops it.
    reattach : callable
        Opens a new log stream of a run id (:func:`log_stream_cmd`); this function stops
        the streams it opened.
    status_of : callable
        The run's status at the SuperLink, None if it could not be read (:func:`run_status`).
    sink : list of str
        Receives every line once (also read by other threads while the run goes on).
    watch : ProgressWatch or None (default: None = ``ProgressWatch()``)
        The bound on time without progress.
    deadline : float or None (default: None)
        ``time.monotonic()`` past which it gives up whatever the progress.
    poll : float (default: 5)
        Seconds between checks of the bounds, and before re-attaching a stream.
    echo : bool (default: True)
        Also write each line to stdout.
    """
    watch = watch or ProgressWatch()
    feed, end = _Feed(sink, echo), RunEnd()
    feed.attach(proc)
    try:
        while True:
            item = feed.get(min(poll, watch.remaining()))
            if isinstance(item, str):
                watch.saw(item)
                match = RUN_STARTED.search(item)
                if match is not None and end.run_id is None:
                    end.run_id = int(match.group(1))
            elif item is False:
                if end.exit_code is None:
                    end.exit_code = proc.wait()
                if end.run_id is None:
                    return end  # flwr run failed before it submitted a run
                status = status_of(end.run_id)
                if status is not None and status.startswith(FINISHED):
                    end.status = status
                    return end
                time.sleep(poll)  # the stream ended early (or the SuperLink did not answer)
                feed.attach(reattach(end.run_id))
                end.reattached += 1
            if watch.remaining() <= 0:
                end.gave_up = f"no progress within {watch.limit():.0f} s"
                return end
            if deadline is not None and time.monotonic() > deadline:
                end.gave_up = "past the deadline"
                return end
    finally:
        if end.exit_code is None:
            end.exit_code = proc.poll()
        for stream in feed.procs[1:]:
            if stream.poll() is None:
                stop_group(stream)


def follow_flwr_run(
    cmd: list[str],
    env: dict[str, str],
    app: Path,
    connection: str,
    sink: list[str],
    watch: ProgressWatch | None = None,
    deadline: float | None = None,
) -> RunEnd:
    """Start ``cmd`` (``flwr run ... --stream``) and :func:`follow_run` it to the run's end.

    ``connection`` is the SuperLink connection's name in ``$FLWR_HOME/config.toml``; every
    ``flwr`` process started here is stopped at the end (also on Ctrl-C: they run in their
    own sessions and would not see it).
    """
    proc = start_stream(cmd, env, app)
    try:
        return follow_run(
            proc,
            lambda run: start_stream(log_stream_cmd(run, connection), env, app),
            lambda run: run_status(run, connection, env, app),
            sink,
            watch,
            deadline,
        )
    finally:
        if proc.poll() is None:
            stop_group(proc)


def start_stream(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """Start a ``flwr`` command in its own session, its output (stderr merged) as text."""
    return subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def log_stream_cmd(run_id: int, connection: str) -> list[str]:
    """``flwr log <run_id> <connection> --stream``: the run's log from its start, then live."""
    return [str(flwr_bin("flwr")), "log", str(run_id), connection, "--stream"]


def run_status(run_id: int, connection: str, env: dict[str, str], app: Path) -> str | None:
    """The run's status at the SuperLink (``flwr ls``), e.g. ``finished:completed``; None
    if it could not be read."""
    cmd = [str(flwr_bin("flwr")), "ls", connection, "--run-id", str(run_id), "--format", "json"]
    try:
        res = subprocess.run(cmd, env=env, cwd=app, capture_output=True, text=True, timeout=120)
        return str(json.loads(res.stdout)["runs"][0]["status"])
    except (subprocess.TimeoutExpired, ValueError, KeyError, IndexError):
        return None

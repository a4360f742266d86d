"""Waits derived from measured progress: run a deployment until it ends or stops progressing.

A fixed wall budget fails a healthy run on a loaded machine (at load 15 on 2 cores a group
round takes a minute) and hides a hung one on an idle machine for as long. Here a command
runs as long as it makes progress, by the bound of
:class:`fl_r2sp.fl.flower.run_watch.ProgressWatch` (silent at most ``startup`` s before its
first progress line, then at most ``factor`` x the longest gap so far, at least ``floor``
s), so the allowed wait grows with the machine's measured slowness.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from fl_r2sp.fl.flower.run_watch import UPDATE_LINE, ProgressWatch

#: Exit status reported for a command stopped for want of progress.
STALLED = -9
#: Seconds a stopped command gets to clean up after SIGINT before SIGKILL.
GRACE = 90.0


def run_while_progressing(
    cmd: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    progress: re.Pattern[str] = UPDATE_LINE,
    startup: float = 600.0,
    factor: float = 4.0,
    floor: float = 180.0,
) -> tuple[int, str]:
    """Run ``cmd`` to its end unless it stops progressing; (exit status, all output).

    A command that stalled gets SIGINT (the scripts stop what they started, as on Ctrl-C),
    SIGKILL if still running after :data:`GRACE` s, and is reported with exit status
    :data:`STALLED` and a last line saying how long it went without progress.
    """
    proc = subprocess.Popen(
        list(cmd), cwd=cwd, env=None if env is None else dict(env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
    out: list[str] = []
    watch = ProgressWatch(progress, startup, factor, floor)
    while True:
        try:
            line = lines.get(timeout=max(0.0, watch.remaining()))
        except queue.Empty:
            _stop(proc)
            out.append(f"[progress watch] stopped: no progress within {watch.limit():.0f} s")
            return STALLED, "".join(out)
        if line is None:
            return proc.wait(), "".join(out)
        out.append(line)
        watch.saw(line)


def _stop(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _pump(proc: subprocess.Popen[str], sink: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        sink.put(line)
    sink.put(None)

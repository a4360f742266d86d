"""Following a run to the SuperLink's status: a log stream that exits early is re-attached
without repeating lines; a run that stops progressing is given up; the progress bound grows
with the measured gaps (fake streams and a fake clock: nothing is timed)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.run_watch import LOG_START, STOP_GRACE, ProgressWatch, follow_run, watch_for

HEAD = ["Loading project configuration...\n", "Successfully started run 42\n"]
LOG = [f"{LOG_START} `42`\n", "[fl-r2sp] update 1/3\n", "[fl-r2sp] update 2/3\n"]
REST = ["[fl-r2sp] update 3/3\n", "run directory: runs/x\n"]


class FakeStream:
    """A finished-or-blocking process with canned output (what follow_run reads)."""

    def __init__(self, lines: list[str], code: int = 0, hang: bool = False) -> None:
        self.lines, self.code, self.hang = lines, code, hang
        self.release = threading.Event()

    @property
    def stdout(self) -> Iterator[str]:
        yield from self.lines
        if self.hang:
            self.release.wait()

    def wait(self) -> int:
        return self.code

    def poll(self) -> int:
        return self.code


def follow(first: FakeStream, replays: list[FakeStream], statuses: list[str | None], **kw: Any):
    asked: list[int] = []

    def status_of(run: int) -> str | None:
        asked.append(run)
        return statuses.pop(0)

    sink: list[str] = []
    end = follow_run(
        first,  # type: ignore[arg-type]
        lambda run: replays.pop(0),  # type: ignore[arg-type,return-value]
        status_of,
        sink,
        poll=0.0,
        echo=False,
        **kw,
    )
    return end, sink, asked


def test_a_stream_that_exits_early_is_reattached_until_the_run_finishes() -> None:
    # flwr run's stream exits 0 after two updates while the SuperLink says "running"; the
    # re-attached `flwr log` replays the log from its start, then the rest.
    replay = FakeStream([f"{LOG_START} `42`\n", *LOG[1:], *REST])
    end, sink, asked = follow(FakeStream(HEAD + LOG), [replay], ["running", "finished:completed"])
    assert end.run_id == 42 and end.exit_code == 0 and end.reattached == 1
    assert end.status == "finished:completed" and end.completed and end.gave_up is None
    assert asked == [42, 42]
    body = [line for line in sink if "update" in line or "directory" in line]
    assert body == LOG[1:] + REST  # every log line once, in order


def test_a_finished_stream_ends_the_watch_with_the_superlinks_status() -> None:
    end, _, asked = follow(FakeStream(HEAD + LOG + REST), [], ["finished:failed"])
    assert end.status == "finished:failed" and not end.completed and end.reattached == 0
    assert asked == [42]


def test_flwr_run_failing_before_it_submits_a_run_asks_no_status() -> None:
    end, sink, asked = follow(FakeStream(["Invalid run configuration\n"], code=1), [], [])
    assert end.run_id is None and end.exit_code == 1 and end.status is None and asked == []
    assert sink == ["Invalid run configuration\n"]


def test_a_run_that_stops_progressing_is_given_up() -> None:
    hung = FakeStream(HEAD + LOG, hang=True)
    watch = ProgressWatch(startup=0.0, floor=0.0, factor=0.0)
    try:
        end, _, asked = follow(hung, [], [], watch=watch)
    finally:
        hung.release.set()
    assert end.gave_up is not None and end.gave_up.startswith("no progress within")
    assert end.status is None and not end.completed and asked == []


def test_the_progress_bound_grows_with_the_measured_gaps() -> None:
    now = [0.0]
    watch = ProgressWatch(startup=100.0, factor=4.0, floor=10.0, clock=lambda: now[0])
    now[0] = 50.0
    watch.saw("discovery: 8 nodes\n")  # not progress: only silence counts before the first
    assert watch.limit() == 100.0 and watch.remaining() == 100.0
    now[0] = 60.0
    watch.saw("[fl-r2sp] update 1\n")  # first gap: the 60 s since the start
    assert watch.limit() == 240.0
    now[0] = 65.0
    watch.saw("[fl-r2sp] update 2\n")  # a shorter gap leaves the bound
    assert watch.limit() == 240.0 and watch.remaining() == 240.0
    now[0] = 65.0 + 241.0
    watch.saw("some other line\n")  # other lines do not count as progress
    assert watch.remaining() < 0


def test_the_scripts_watch_is_never_tighter_than_the_runs_own_bounds() -> None:
    # The app fails a run after max-update-gap without an update and waits node-wait for its
    # nodes: the watch allows both, plus time to stop and write the folder.
    watch = watch_for({"max-update-gap": 60, "node-wait": 900})
    assert watch.floor == 60 + STOP_GRACE and watch.startup == 900 + STOP_GRACE
    defaults = watch_for({})
    assert defaults.floor == RunConfig().max_update_gap + STOP_GRACE
    assert defaults.startup == 600.0  # node-wait (120) + grace is less

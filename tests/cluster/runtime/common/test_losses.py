"""Loss by evidence: the supervisor's exit mark reaches the ranks' board, a wait on gloo work
stops at once when a watched peer is gone, and one numbering names every rank."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Iterator

import pytest
import torch.distributed as dist

from fl_r2sp.cluster.local import free_port
from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common.losses import (
    CLOSED,
    EXIT,
    ExitBoard,
    ExitPublisher,
    PeerGone,
    exited_key,
    wait_works,
)


@pytest.fixture
def store() -> Iterator[tuple[dist.TCPStore, int]]:
    port = free_port()
    timeout = datetime.timedelta(seconds=10)
    server = dist.TCPStore("127.0.0.1", port, is_master=True, timeout=timeout,
                           wait_for_workers=False)  # fmt: skip
    yield dist.PrefixStore("default_pg", server), port


class _Work:
    """A gloo work stand-in that completes when ``done`` is set (or fails with ``error``)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.done, self.error = threading.Event(), error

    def wait(self, timeout: datetime.timedelta) -> bool:
        if not self.done.wait(timeout.total_seconds()):
            raise RuntimeError("timed out")
        if self.error is not None:
            raise self.error
        return True


def test_the_supervisors_mark_reaches_a_rank_below_any_prefix(store: tuple) -> None:
    prefixed, port = store
    board = ExitBoard(prefixed, lambda r: names.rank_name(r, 3, 3))
    assert board.gone([1, 2]) == {}
    publisher = ExitPublisher("127.0.0.1", port)
    assert publisher.publish(1, "worker 1 (rank 1)", "was killed by signal 9")
    seen = board.gone([1, 2])
    assert list(seen) == [1] and seen[1]["evidence"] == EXIT
    reason = "worker 1 (rank 1) was killed by signal 9 (process exit)"
    assert str(board.first_gone([2, 1])) == reason
    assert publisher.published == {1: reason}


def test_a_closed_connection_is_published_unless_the_exit_came_first(store: tuple) -> None:
    prefixed, port = store
    board = ExitBoard(prefixed, lambda r: names.rank_name(r, 3, 3))
    board.report_closed(2, "Connection closed by peer")
    ExitPublisher("127.0.0.1", port).publish(1, "worker 1 (rank 1)", "exited with code 17")
    board.report_closed(1, "Connection reset by peer")  # too late: the exit stays
    raw = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False)
    assert json.loads(raw.get(exited_key(2)))["evidence"] == CLOSED
    assert json.loads(raw.get(exited_key(1)))["evidence"] == EXIT


def test_a_wait_on_a_dead_peer_stops_at_the_mark_not_at_the_timeout(store: tuple) -> None:
    prefixed, port = store
    board = ExitBoard(prefixed, str)
    threading.Timer(0.3, ExitPublisher("127.0.0.1", port).publish,
                    (2, "worker 2 (rank 2)", "was killed by signal 9")).start()  # fmt: skip
    t0 = time.monotonic()
    with pytest.raises(PeerGone, match="worker 2 \\(rank 2\\)") as exc:
        wait_works([_Work()], 60.0, [1, 2], board)
    assert exc.value.evidence == EXIT
    assert time.monotonic() - t0 < 30.0  # far below the 60 s timeout (a hang would reach it)


def test_a_wait_returns_its_works_result_and_error() -> None:
    ok, bad = _Work(), _Work(RuntimeError("Connection closed by peer"))
    ok.done.set()
    bad.done.set()
    wait_works([ok], 5.0, [1], None)
    with pytest.raises(RuntimeError, match="closed by peer"):
        wait_works([ok, bad], 5.0, [1], None)
    with pytest.raises(PeerGone, match="given up"):
        wait_works([_Work()], 60.0, [1], None, lambda: "given up")


@pytest.mark.parametrize(("world", "workers", "rank", "name"), [
    (4, 3, 0, "parameter server 0 (rank 0)"),
    (4, 3, 2, "worker 1 (rank 2)"),
    (3, 3, 1, "worker 1 (rank 1)"),  # OSP-C and the serverless families: worker w is rank w
    (5, 3, 1, "parameter server 1 (rank 1)"),
])  # fmt: skip
def test_one_numbering_names_every_rank(world: int, workers: int, rank: int, name: str) -> None:
    assert names.rank_name(rank, world, workers) == name
    w = names.worker_of_rank(rank, world, workers)
    assert w is None or names.rank_of_worker(w, world, workers) == rank
    with pytest.raises(ValueError, match="do not fit"):
        names.rank_name(0, 2, 3)


def test_a_point_to_point_work_failing_on_a_closed_connection_names_its_peer(
    store: tuple,
) -> None:
    prefixed, _ = store
    board = ExitBoard(prefixed, lambda r: names.rank_name(r, 3, 3))
    ok, closed = _Work(), _Work(RuntimeError("[pair.cc:561] Connection closed by peer [::1]:5"))
    ok.done.set()
    closed.done.set()
    with pytest.raises(RuntimeError, match="closed by peer"):
        wait_works([ok, closed], 5.0, [2, 1], board, owners=[2, 1])
    assert list(board.gone([1, 2])) == [1] and board.gone([1])[1]["evidence"] == CLOSED
    assert board.gone([1])[1]["name"] == "worker 1 (rank 1)"

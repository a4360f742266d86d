"""A pulled reply whose objects never arrive fails within the bound, not after 180 s.

Flower's real ``HttpGrid.pull_messages`` runs against a stand-in Runtime API client: the
SuperLink hands over a reply whose one object is "not available yet" for its first
``ready_after`` pulls (a SuperNode stopped mid-upload never makes it available).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, Metadata, RecordDict
from flwr.app.message import make_message
from flwr.common.constant import ErrorCode
from flwr.common.serde import message_to_proto
from flwr.proto.message_pb2 import ObjectTree, PullObjectResponse
from flwr.proto.runtime_pb2 import PullAppMessagesResponse
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, get_object_tree
from flwr.supercore.run import Run
from flwr.superlink.grid import http_grid
from flwr.superlink.grid.http_grid import HttpGrid

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower import grid_transport
from fl_r2sp.fl.flower.object_wait import OBJECT_WAIT, bounded_object_pulls
from fl_r2sp.fl.flower.strategy import FLR2SP
from tests.fl.flower.test_liveness import TEMPLATE, FakeGrid, stand_in_message


class _Runtime:
    """The calls ``pull_messages`` makes, answered for one stored reply."""

    def __init__(self, reply: Message, ready_after: int) -> None:
        reply.metadata.__dict__["_message_id"] = reply.object_id
        self.reply, self.ready_after, self.pulls = reply, ready_after, 0
        self.objects = {k: v.deflate() for k, v in get_all_nested_objects(reply).items()}

    def PullMessages(self, request: Any) -> PullAppMessagesResponse:  # noqa: N802 -- Flower's
        tree: ObjectTree = get_object_tree(self.reply)
        return PullAppMessagesResponse(
            messages_list=[message_to_proto(self.reply)], message_object_trees=[tree]
        )

    def PullObject(self, request: Any) -> PullObjectResponse:  # noqa: N802 -- Flower's
        self.pulls += 1
        ready = self.pulls > self.ready_after
        content = self.objects[request.object_id] if ready else b""
        return PullObjectResponse(object_found=True, object_available=ready, object_content=content)

    def ConfirmMessageReceived(self, request: Any) -> None:  # noqa: N802 -- Flower's
        return None


def _grid(ready_after: int) -> tuple[HttpGrid, _Runtime]:
    meta = Metadata(
        run_id=5, message_id="", src_node_id=7, dst_node_id=1, reply_to_message_id="q",
        group_id="", created_at=time.time(), ttl=60.0, message_type=MessageType.QUERY,
    )  # fmt: skip
    reply = make_message(meta, RecordDict({"config": ConfigRecord({"partition-id": 3})}))
    grid = HttpGrid(token="t")
    runtime = _Runtime(reply, ready_after)
    grid._client = runtime  # type: ignore[assignment]  # stands in for the Runtime API
    grid.set_run(Run.create_empty(run_id=reply.metadata.run_id))
    return grid, runtime


def test_a_reply_without_its_objects_becomes_an_error_within_the_bound() -> None:
    # Without the bound Flower pulls again after ~1 s and gets the object (ready after 1
    # pull): the reply would come back whole, not as an error.
    grid, runtime = _grid(ready_after=1)
    with bounded_object_pulls(0.0):
        (msg,) = grid.pull_messages(["m"])
    assert msg.has_error() and msg.error.code == ErrorCode.MESSAGE_UNAVAILABLE
    assert "object-push session expired" in (msg.error.reason or "")


def test_after_the_block_flowers_own_wait_applies_again() -> None:
    with bounded_object_pulls(0.0):
        pass
    grid, runtime = _grid(ready_after=1)
    (msg,) = grid.pull_messages(["m"])  # retried after ~1 s, then whole
    assert not msg.has_error() and msg.content["config"]["partition-id"] == 3
    assert runtime.pulls == 1 + len(runtime.objects)  # one "not yet", then each object


def test_none_keeps_flowers_wait() -> None:
    grid, runtime = _grid(ready_after=1)
    with bounded_object_pulls(None):
        (msg,) = grid.pull_messages(["m"])
    assert not msg.has_error() and runtime.pulls == 1 + len(runtime.objects)


def test_a_wall_clock_run_pulls_every_reply_with_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grid_transport, "Message", stand_in_message)
    grid = FakeGrid({11: 0, 12: 1}, num_partitions=2)
    bounds: list[object] = []  # the object wait in force at each pull
    pull = grid.pull_messages

    def pull_recording(ids: list[str]) -> list[Any]:
        bounds.append(getattr(vars(http_grid)["pull_objects"], "keywords", {}).get("max_time"))
        return pull(ids)

    grid.pull_messages = pull_recording  # type: ignore[method-assign]
    cfg = RunConfig(
        clock="wall", num_partitions=2, num_groups=1, max_updates=1, timing_only=True,
        plots=False, run_dir=str(tmp_path), node_wait=5.0,
        federated_eval_every=-1,  # the stand-in grid answers train and query messages only
    )  # fmt: skip
    FLR2SP(cfg).start(grid=grid, initial_arrays=ArrayRecord(TEMPLATE), num_rounds=1, timeout=30)
    assert bounds and set(bounds) == {OBJECT_WAIT}
    assert "keywords" not in dir(vars(http_grid)["pull_objects"])  # restored after the run


def test_the_stock_fedavg_baseline_pulls_with_the_bound_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``strategy = "fedavg"`` runs Flower's own FedAvg loop: its pulls are bounded as well."""
    from flwr.serverapp.strategy import FedAvg

    from fl_r2sp.fl.flower import fedavg_baseline

    seen: list[object] = []

    def start(self: Any, **kw: Any) -> Any:
        seen.append(getattr(vars(http_grid)["pull_objects"], "keywords", {}).get("max_time"))
        raise RuntimeError("stop here: only the bound in force matters")

    monkeypatch.setattr(FedAvg, "start", start)
    cfg = RunConfig(strategy="fedavg", clock="wall", num_partitions=2, timing_only=True,
                    plots=False, run_dir=str(tmp_path))  # fmt: skip
    with pytest.raises(RuntimeError, match="stop here"):
        grid: Any = FakeGrid({11: 0, 12: 1}, num_partitions=2)
        fedavg_baseline.run_fedavg(grid, cfg, ArrayRecord(TEMPLATE))
    assert seen == [OBJECT_WAIT]
    assert "keywords" not in dir(vars(http_grid)["pull_objects"])  # restored after the run

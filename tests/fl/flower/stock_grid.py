"""A stand-in Flower Grid whose nodes run a *stock* ClientApp, as Flower's templates write it.

No query handler (a query gets Flower 1.42's error reply "No query function registered
with name 'default'"), a train handler that reads ``config["lr"]`` and replies only
``arrays`` + metrics ``num-examples`` / ``train_loss``, and an evaluate handler that
replies metrics ``eval_acc`` + ``num-examples``. Every message is kept in ``received``.
Flower builds real ``Message`` objects only inside a running app, so the modules'
``Message`` is replaced by :func:`stand_in_message` (fixture ``stand_in_messages``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from flwr.app import ArrayRecord, MetricRecord

from fl_r2sp.fl.flower import federated_eval, grid_transport

NO_QUERY = "<class 'ValueError'>:<'No query function registered with name 'default''>"


def stand_in_message(content: Any, dst: int, kind: str, ttl: float = 0.0) -> SimpleNamespace:
    return SimpleNamespace(content=content, dst=dst, kind=kind)


@pytest.fixture
def stand_in_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid_transport, "Message", stand_in_message)
    monkeypatch.setattr(federated_eval, "Message", stand_in_message)


def reply(mid: str, node: int, content: Any = None, error: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        content=content,
        has_error=lambda: error is not None,
        error=SimpleNamespace(reason=error, code=2),
        metadata=SimpleNamespace(reply_to_message_id=mid, src_node_id=node),
    )


def examples(node: int) -> int:
    """A node's number of examples (differs per node, so weighting shows)."""
    return 10 + node % 7


def local_step(arrays: list[np.ndarray], lr: float) -> list[np.ndarray]:
    """The stock client's 'training': float arrays move by lr toward 1/3, others stay."""
    out = []
    for a in arrays:
        out.append(a + lr * (1.0 / 3.0 - a) if np.issubdtype(a.dtype, np.floating) else a)
    return out


class StockGrid:
    """Nodes ``ids`` running the stock ClientApp; ``query_error`` overrides the query reply."""

    def __init__(self, ids: list[int], query_error: str = NO_QUERY) -> None:
        self.online = set(ids)
        self.query_error = query_error
        self.answers: dict[int, dict[str, int]] = {}  # nodes with a query handler
        self.drop: set[str] = set()  # train replies lack these: "arrays", "metrics", "num-examples"
        self.received: list[tuple[str, int, dict[str, Any]]] = []  # (kind, node, config)
        self._ready: dict[str, SimpleNamespace] = {}
        self._seq = 0

    def get_node_ids(self) -> list[int]:
        return sorted(self.online)

    def push_messages(self, msgs: list[Any]) -> list[str]:
        return [self._push(m) for m in msgs]

    def pull_messages(self, ids: list[str]) -> list[SimpleNamespace]:
        return [self._ready.pop(i) for i in ids if i in self._ready]

    def _push(self, msg: Any) -> str:
        self._seq += 1
        mid, node = f"m{self._seq}", msg.dst
        config = dict(msg.content["config"]) if "config" in msg.content else {}
        self.received.append((msg.kind, node, config))
        if msg.kind == "query":
            if node in self.answers:
                self._ready[mid] = reply(mid, node, {"config": self.answers[node]})
            else:
                self._ready[mid] = reply(mid, node, error=self.query_error)
        elif msg.kind == "train":
            self._ready[mid] = reply(mid, node, self._train(msg, node, config))
        else:
            n = examples(node)
            metrics = MetricRecord({"eval_acc": node / 100.0, "num-examples": n})
            self._ready[mid] = reply(mid, node, {"metrics": metrics})
        return mid

    def _train(self, msg: Any, node: int, config: dict[str, Any]) -> dict[str, Any]:
        record = msg.content["arrays"]
        names = list(record.keys())
        new = local_step(record.to_numpy_ndarrays(), float(config["lr"]))
        arrays = ArrayRecord(dict(zip(names, map(_array, new), strict=True)))
        metrics = MetricRecord({"num-examples": examples(node), "train_loss": 0.5})
        if "num-examples" in self.drop:
            metrics = MetricRecord({"train_loss": 0.5})
        content = {"arrays": arrays, "metrics": metrics}
        for key in self.drop & {"arrays", "metrics"}:
            del content[key]
        return content


def _array(a: np.ndarray) -> Any:
    from flwr.app import Array

    return Array(a)

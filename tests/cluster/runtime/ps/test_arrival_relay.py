"""The other shards' arrivals reach rank 0's writer as they happen (``arrival_relay``)."""

from __future__ import annotations

import torch.distributed as dist

from fl_r2sp.cluster.runtime.ps.arrival_relay import ArrivalReceiver, ArrivalSender


def test_relayed_arrivals_are_written_in_order_and_the_report_fills_only_the_rest() -> None:
    store = dist.HashStore()
    rows: list[tuple[int, int, int, float]] = []
    receiver = ArrivalReceiver(3, lambda *row: rows.append(row), store)
    one, two = ArrivalSender(1, store), ArrivalSender(2, store)
    one.send(0, 0, 0.5)
    two.send(1, 0, 0.6)
    one.send(1, 0, 0.7)
    receiver._drain()  # what the polling thread does every POLL_S
    assert rows == [(1, 0, 0, 0.5), (1, 1, 0, 0.7), (2, 1, 0, 0.6)]
    one.send(0, 1, 0.9)  # relayed, not yet polled: finish() takes it from the store
    reports = [
        {"shard": 0, "arrivals": [[0, 0, 0.1]]},  # rank 0's own shard: written by PS 0 itself
        {"shard": 1, "arrivals": [[0, 0, 0.5], [1, 0, 0.7], [0, 1, 0.9]]},
        {"shard": 2, "arrivals": [[1, 0, 0.6], [0, 1, 1.2]]},  # one arrival never relayed
    ]
    receiver.finish(reports)
    assert rows[3:] == [(1, 0, 1, 0.9), (2, 0, 1, 1.2)]  # nothing written twice
    assert receiver.received == {1: 3, 2: 2}


def test_a_single_parameter_server_relays_nothing() -> None:
    receiver = ArrivalReceiver(1, lambda *row: None, dist.HashStore()).start()
    receiver.finish([{"shard": 0, "arrivals": [[0, 0, 0.1]]}])
    assert receiver.received == {}

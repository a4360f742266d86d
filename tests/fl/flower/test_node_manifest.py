"""A partition belongs to a key: a stranger claiming a bound partition gets no work."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from fl_r2sp.fl.flower.grid_transport import GridTransport, find_partitions
from fl_r2sp.fl.flower.node_manifest import Binding, fingerprint, read_manifest, write_manifest
from fl_r2sp.fl.flower.pki import make_node_key
from fl_r2sp.fl.flower.run_config_check import check_run_config
from tests.fl.flower.test_liveness import FAST, TEMPLATE, FakeGrid, job, stand_in_messages

__all__ = ["stand_in_messages"]  # the fixture that stands in for Flower's Message

#: Real nodes 100..105 serve partitions 0..5, each bound to its registered key.
BOUND = {pid: Binding(100 + pid, f"SHA256:key-of-partition-{pid}") for pid in range(6)}


def test_the_stranger_that_answers_first_does_not_take_partition_5(caplog) -> None:
    # Node 7 registered a fresh key and claims partition 5; its id sorts first, so it is asked
    # and answers first (without a manifest it would take the partition: see the next test).
    grid = FakeGrid({7: 5, **{100 + p: p for p in range(6)}}, 6)
    with caplog.at_level(logging.WARNING, logger="fl_r2sp"):
        pmap = find_partitions(
            grid, timeout=1.0, expected=6, wait_for_all=True, retry=FAST, bindings=BOUND
        )
    assert pmap.node_of == {p: 100 + p for p in range(6)}
    assert pmap.refused == {7: (5, pmap.refused[7][1])}
    assert "node 7 refused, no work for it: partition 5 belongs to the key" in caplog.text
    assert "SHA256:key-of-partition-5 (node 105)" in caplog.text
    transport = GridTransport(grid, TEMPLATE, pmap.node_of, pmap=pmap, retry=FAST)
    transport.submit(job(5))
    (answer,) = transport.poll(timeout=5.0)
    assert answer.error is None and grid.trained == [(105, 5)]  # the real node 5 trained
    grid.online.discard(105)  # even with the real node gone, the stranger never takes over
    assert pmap.refresh() == [] and pmap.node_of[5] == 105 and pmap.lost() == {5}


def test_without_a_manifest_the_first_answer_takes_the_partition() -> None:
    grid = FakeGrid({7: 5, **{100 + p: p for p in range(6)}}, 6)
    pmap = find_partitions(grid, timeout=1.0, expected=6, wait_for_all=True, retry=FAST)
    assert pmap.node_of[5] == 7  # the weakness the manifest closes


def test_the_manifest_round_trips_and_bad_ones_name_the_file(tmp_path: Path) -> None:
    key = make_node_key(tmp_path, "node-0")
    fp = fingerprint(key.public.read_bytes())
    assert fp.startswith("SHA256:") and len(fp) == 7 + 43  # as ssh-keygen -l prints it
    path = write_manifest(tmp_path / "nodes.json", {0: Binding(41, fp)})
    assert read_manifest(path) == {0: Binding(41, fp)}
    check_run_config({"num-partitions": 4, "num-groups": 2, "node-manifest": str(path)})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": 1, "partitions": {"0": {"node": 1}}}))
    with pytest.raises(ValueError, match=f"node-manifest {bad}: not a node manifest"):
        check_run_config({"num-partitions": 4, "num-groups": 2, "node-manifest": str(bad)})
    with pytest.raises(ValueError, match="cannot be read"):
        read_manifest(tmp_path / "missing.json")
    twice = write_manifest(tmp_path / "twice.json", {0: Binding(41, fp), 1: Binding(41, fp)})
    with pytest.raises(ValueError, match="bound to two partitions"):
        read_manifest(twice)

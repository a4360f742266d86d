"""Start-up handshakes that do not wait for a lost peer (``gather_live``), on a real store."""

from __future__ import annotations

import datetime

import pytest
import torch.distributed as dist

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import gather_live, set_json


def _store() -> dist.Store:
    return dist.HashStore()


def _key(v: int) -> str:
    return P.calibration_key("cost", v)


def test_every_peer_that_set_its_key_is_gathered() -> None:
    store = _store()
    for v in range(3):
        set_json(store, _key(v), {"cost": 0.01 * (v + 1)})
    got = gather_live(store, _key, range(3), timeout_s=5.0)
    assert {v: got[v]["cost"] for v in got} == {0: 0.01, 1: 0.02, 2: 0.03}


def test_a_peer_marked_lost_is_not_waited_for() -> None:
    store = _store()
    set_json(store, _key(0), {"cost": 0.01})
    set_json(store, P.lost_key(1), {"reason": "killed"})
    set_json(store, _key(2), {"cost": 0.03})
    assert sorted(gather_live(store, _key, range(3), timeout_s=5.0)) == [0, 2]


def test_a_value_set_before_the_peer_was_lost_still_counts() -> None:
    """Every reader must gather the same set: the value predates the loss mark."""
    store = _store()
    for v in range(3):
        set_json(store, _key(v), {"cost": 0.01})
    set_json(store, P.lost_key(1), {"reason": "killed after its calibration"})
    assert sorted(gather_live(store, _key, range(3), timeout_s=5.0)) == [0, 1, 2]


def test_a_silent_peer_ends_the_wait_naming_it() -> None:
    store = _store()
    store.set_timeout(datetime.timedelta(seconds=5))
    set_json(store, _key(0), {"cost": 0.01})
    with pytest.raises(TimeoutError, match=r"from worker 1, worker 2 within 0s"):
        gather_live(store, _key, range(3), timeout_s=0.2)

"""The cluster twins dispatch typed events and refuse a kind they have no handler for."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fl_r2sp.cluster.policies.ps.asp import ASPParams
from fl_r2sp.cluster.policies.reduce import ReduceParams
from fl_r2sp.cluster.sim.common.events import dispatch
from fl_r2sp.cluster.sim.ps.engine import Twin
from fl_r2sp.cluster.sim.ps.spec import TwinSpec
from fl_r2sp.cluster.sim.reduce.engine import ReduceSim
from fl_r2sp.cluster.sim.reduce.spec import ReduceSimSpec


@dataclass(frozen=True)
class Stray:
    """An event kind no twin knows (it would have been the timer before)."""

    key: int = 0


def test_dispatch_runs_the_handler_of_the_type_and_raises_on_an_unknown_one() -> None:
    seen: list[object] = []
    dispatch({Stray: seen.append}, Stray(3))
    assert seen == [Stray(3)]
    with pytest.raises(TypeError, match="no handler for event Stray"):
        dispatch({}, Stray())


def test_the_ps_twin_raises_on_an_unknown_event_kind() -> None:
    twin = Twin(
        TwinSpec(
            params=ASPParams(),
            num_workers=2,
            num_servers=1,
            model_bytes=1e6,
            batch_size=10,
            iterations=3,
            speeds=(100.0,),
            server_bandwidth=1e8,
        )
    )
    twin.queue.push(0.0, 9, 0, Stray())
    with pytest.raises(TypeError, match="Stray"):
        twin.run()


def test_the_reduce_twin_raises_on_an_unknown_event_kind() -> None:
    sim = ReduceSim(ReduceSimSpec(ReduceParams("allreduce"), num_workers=3, duration_s=5.0))
    sim.queue.push(0.0, 9, 0, Stray())
    with pytest.raises(TypeError, match="Stray"):
        sim.run()

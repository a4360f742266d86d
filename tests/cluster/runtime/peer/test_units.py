"""Units shared by the serverless cluster families (all-reduce, DS-Sync): config dict helpers,
CLI value parsers, the worker's kill hook and slowdown."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import pytest

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.common.cli_values import links_text, parse_floats
from fl_r2sp.cluster.runtime.peer import worker as peer_worker
from fl_r2sp.cluster.runtime.peer.config import PeerRunMixin, run_kwargs, run_to_dict
from fl_r2sp.cluster.runtime.ps.worker import KILL_ENV


@dataclass(frozen=True)
class _Run(PeerRunMixin):
    base: ClusterConfig = field(default_factory=ClusterConfig)
    knob: float = 1.5


def test_mixin_reads_world_size_and_time_limit_off_base() -> None:
    run = _Run(base=ClusterConfig(workers=6, run_timeout_s=77.0))
    assert (run.world_size, run.run_timeout_s) == (6, 77.0)


def test_run_to_dict_nests_base_without_its_ps_scheme() -> None:
    out = run_to_dict(_Run(base=ClusterConfig(workers=3)))
    assert list(out) == ["base", "knob"]
    assert out["base"]["workers"] == 3 and out["knob"] == 1.5 and "scheme" not in out["base"]


def test_run_kwargs_round_trip_and_unknown_keys() -> None:
    data = run_to_dict(_Run(base=ClusterConfig(workers=5), knob=2.0))
    assert _Run(**run_kwargs(_Run, data, "toy")) == _Run(ClusterConfig(workers=5), 2.0)
    with pytest.raises(ValueError, match=r"unknown toy run config keys \['zz'\]"):
        run_kwargs(_Run, {**data, "zz": 1}, "toy")


def test_parse_floats_and_links_text() -> None:
    assert parse_floats("1, 2.5,,") == (1.0, 2.5)
    assert parse_floats("") == ()
    with pytest.raises(argparse.ArgumentTypeError, match="comma-separated numbers"):
        parse_floats("1,x")
    assert links_text([20.0, 5.0, 12.5]) == "links 5-20 MB/s"
    assert links_text([]) == "links uncapped"


def test_kill_iteration_names_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KILL_ENV, "2:7")
    assert (peer_worker.kill_iteration(2), peer_worker.kill_iteration(3)) == (7, -1)
    monkeypatch.delenv(KILL_ENV)
    assert peer_worker.kill_iteration(2) == -1


def test_slow_down_sleeps_the_extra_share_plus_the_fixed_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A compute of 2 s (fake clock) on worker 1 with multiplier 1.5 and delay 0.25 s:
    # (1.5 - 1) x 2 + 0.25 = 1.25 s of sleep.
    slept: list[float] = []
    monkeypatch.setattr(peer_worker.time, "perf_counter", lambda: 12.0)
    monkeypatch.setattr(peer_worker.time, "sleep", slept.append)
    w = peer_worker.PeerWorker.__new__(peer_worker.PeerWorker)
    w.w = 1
    w.base = ClusterConfig(workers=2, compute_multipliers=(1.0, 1.5), iteration_delays=(0.0, 0.25))
    w.slow_down(10.0)
    w.base = ClusterConfig(workers=2)
    w.slow_down(10.0)  # nothing emulated: no sleep
    assert slept == [1.25]

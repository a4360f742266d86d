"""Cluster runtime pieces that need no process group: config, wire format, shard, convergence,
flags. Expected values are computed by hand in the comments."""

from __future__ import annotations

import json
import math

import pytest
import torch

from fl_r2sp.cluster.cli import build_parser, config_from_namespace
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.ps.safa import SAFAParams
from fl_r2sp.cluster.policies.ps.ssp import SSPParams
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.convergence import ConvergenceTracker
from fl_r2sp.cluster.runtime.ps.shard import RunAborted, ShardState
from fl_r2sp.cluster.schemes import PS_FAMILY, scheme_params


def _cfg(**kw: object) -> ClusterConfig:
    base: dict[str, object] = {"model": "mlp", "dataset": "synthetic"}
    base.update(kw)
    return ClusterConfig(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"servers": 4811}, "exceeds the 4810 parameters"),  # the mlp has 4,810 parameters
        ({"scheme": SSPParams(scheme="hogwild")}, "not scheme 'hogwild'"),
        (
            {"scheme": scheme_params("r2sp", worker_gap_factor=1.5)},
            r"worker_gap_factor r must lie in \[0, 1\]",
        ),
        ({"scheme": scheme_params("r2sp", worker_gap_factor=-0.1)}, "worker_gap_factor"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"workers": 0}, "workers must be an integer >= 1"),
        ({"servers": 0}, "servers must be an integer >= 1"),
        ({"lr": 0.0}, "lr must be"),
        ({"momentum": 1.0}, "momentum must be"),
        ({"compute_multipliers": (1.0, 2.0)}, "one value per worker"),
        ({"compute_multipliers": (1.0, 0.5, 1.0, 1.0)}, "compute_multipliers must be"),
        ({"iteration_delays": (0.0, -1.0, 0.0, 0.0)}, "iteration_delays must be"),
        ({"devices": ("tpu",)}, "devices must be"),
        ({"model": "resnet32", "dataset": "copy"}, "does not take dataset"),
        ({"dataset": "imagenet"}, "unknown dataset"),
        ({"scripted_compute": ((0.1,),) * 4, "max_iterations": 2}, "has 1 times for 2"),
    ],
)
def test_bad_config_is_rejected_with_a_clear_message(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _cfg(**kw).validate()


def test_config_round_trips_through_json_dict() -> None:
    cfg = _cfg(scheme=scheme_params("safa"), compute_multipliers=(1, 2, 1, 1),
               scripted_compute=((0.1,) * 100,) * 4)  # fmt: skip
    data = json.loads(json.dumps(cfg.to_dict()))
    back = PS_FAMILY.read(data)
    assert back == cfg
    assert isinstance(back, ClusterConfig) and isinstance(back.scheme, SAFAParams)
    assert back.scheme.deadline_s == math.inf  # travels as "inf" (JSON has no infinity)
    with pytest.raises(ValueError, match="unknown scheme 'hogwild'"):
        PS_FAMILY.read({**data, "scheme": {"scheme": "hogwild"}})


def test_a_run_folder_written_before_the_r_knob_was_renamed_still_loads() -> None:
    data = json.loads(json.dumps(_cfg(scheme=scheme_params("r2sp")).to_dict()))
    knobs = dict(data["scheme"])
    knobs["gap_factor"] = 0.6  # the name before worker_gap_factor
    del knobs["worker_gap_factor"]
    back = PS_FAMILY.read({**data, "scheme": knobs})
    assert back.scheme.worker_gap_factor == 0.6  # type: ignore[union-attr]


def test_the_servers_must_fit_the_parameters_exactly_at_the_limit() -> None:
    _cfg(servers=4810).validate()  # one parameter per shard is allowed


def test_shard_bounds_are_equal_contiguous_and_cover_everything() -> None:
    # 10 = 4 + 3 + 3: the first 10 % 3 = 1 shard takes the extra element.
    assert P.shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert P.shard_bounds(4810, 2) == [(0, 2405), (2405, 4810)]
    with pytest.raises(ValueError, match="non-empty shards"):
        P.shard_bounds(3, 4)


def test_headers_round_trip_and_reject_values_float32_cannot_hold() -> None:
    msg = torch.zeros(P.HEADER + 3)
    P.encode_header(msg, P.DATA, 7, 123456, 512)
    assert P.decode_header(msg) == (P.DATA, 7, 123456, 512)
    with pytest.raises(ValueError, match="2\\*\\*24"):
        P.encode_header(msg, P.DATA, 2**24)


def test_immediate_shard_applies_scaled_updates_and_counts_staleness() -> None:
    shard = ShardState(torch.zeros(2), lr=0.5, base_batch=4, momentum=0.0,
                       apply_mode="immediate", workers=2, track_staleness=True)  # fmt: skip
    out = torch.zeros(2)
    shard.read(0, 0, out, 1.0)  # worker 0 pulls at applied = 0
    shard.read(1, 0, out, 1.0)
    # Worker 1 pushes g = (1, 2) with b = 8 = 2·b0: u = -0.5·2·g = (-1, -2); staleness 0.
    assert shard.push(1, 0, 8, torch.tensor([1.0, 2.0])) == 0
    # Worker 0 pushes g = (2, 0) with b = b0: u = (-1, 0); one update since its pull.
    assert shard.push(0, 0, 4, torch.tensor([2.0, 0.0])) == 1
    assert torch.equal(shard.snapshot(), torch.tensor([-2.0, -2.0]))
    assert shard.applied == 2 and shard.wait_push(0, 0, 0.1) == 1


def test_momentum_at_the_server_is_heavy_ball() -> None:
    shard = ShardState(torch.zeros(1), 1.0, 1, 0.5, "immediate", 1)
    shard.push(0, 0, 1, torch.tensor([1.0]))  # v = 1, p = -1
    shard.push(0, 1, 1, torch.tensor([1.0]))  # v = 0.5·1 + 1 = 1.5, p = -2.5
    assert shard.snapshot().item() == -2.5


def test_barrier_shard_averages_one_iteration_and_versions_pulls() -> None:
    shard = ShardState(torch.zeros(1), 1.0, 2, 0.0, "barrier", 2)
    out = torch.zeros(1)
    shard.push(1, 0, 2, torch.tensor([4.0]))
    assert shard.version == 0 and shard.snapshot().item() == 0.0  # waits for worker 0
    with pytest.raises(TimeoutError):
        shard.read(1, 1, out, 0.05)  # version 1 is not there yet
    shard.push(0, 0, 2, torch.tensor([2.0]))  # mean (4 + 2) / 2 = 3, p = -3
    assert shard.read(1, 1, out, 0.05) == 1 and out.item() == -3.0
    shard.lose(0)
    shard.push(1, 1, 2, torch.tensor([1.0]))  # only worker 1 is live: p = -4
    assert shard.version == 2 and shard.snapshot().item() == -4.0


def test_abort_releases_a_waiting_pull() -> None:
    shard = ShardState(torch.zeros(1), 1.0, 1, 0.0, "barrier", 1)
    shard.abort("worker 3 lost")
    with pytest.raises(RunAborted, match="worker 3 lost"):
        shard.read(0, 1, torch.zeros(1), 5.0)


def test_convergence_needs_window_times_live_pushes_below_the_threshold() -> None:
    tracker = ConvergenceTracker(threshold=1.0, window=2)
    # Two workers: the rule needs 2·2 = 4 consecutive pushes with mean(latest losses) < 1.
    assert not tracker.add(0, 0.5, 2)  # mean 0.5 -> 1
    assert not tracker.add(1, 2.0, 2)  # mean 1.25 -> reset to 0
    assert not tracker.add(1, 0.9, 2)  # mean 0.7 -> 1
    assert not tracker.add(0, 0.8, 2)  # 2
    assert not tracker.add(1, 0.7, 2)  # 3
    assert tracker.add(0, 0.6, 2)  # 4: converged
    assert tracker.mean_loss() == pytest.approx(0.65)
    assert not ConvergenceTracker(0.0, 1).add(0, 0.0, 1)  # threshold 0 = rule off
    nan_only = ConvergenceTracker(1.0, 1)
    assert not nan_only.add(0, math.nan, 1)


def test_no_flag_is_a_prefix_of_a_torchrun_flag_and_torchrun_passes_them_through() -> None:
    from torch.distributed.run import get_args_parser

    torchrun = get_args_parser()
    theirs = [s for action in torchrun._actions for s in action.option_strings]
    ours = [s for action in build_parser()._actions for s in action.option_strings if s != "-h"]
    clashes = [(o, t) for o in ours for t in theirs if t.startswith(o) and o != "--help"]
    assert clashes == []
    argv = ["--nnodes", "2", "--nproc-per-node", "5", "--rdzv-backend", "c10d", "--rdzv-endpoint",
            "host:29400", "-m", "fl_r2sp.cluster.rank", "--scheme", "bsp", "--workers",
            "8", "--servers", "2", "--run-timeout", "9"]  # fmt: skip
    ns = torchrun.parse_args(argv)
    assert ns.training_script_args == argv[argv.index("--scheme") :]
    cfg = config_from_namespace(build_parser().parse_args(ns.training_script_args))
    assert (cfg.scheme.scheme, cfg.workers, cfg.servers, cfg.run_timeout_s) == ("bsp", 8, 2, 9)


def test_push_report_counts_the_pull_in_t():
    """The policy's active time is compute + pull + push of the worker's request.

    Kills the mutation ``comm_s=float(payload["push_s"])`` (the runtime's T leaving out the pull),
    and one reading the blocking into the active time.
    """
    from fl_r2sp.cluster.runtime.ps.coordinator import push_report

    payload = {"iteration": 3, "compute_s": 0.5, "pull_s": 0.25, "push_s": 0.125,
               "blocking_s": 2.0, "batch_size": 16, "loss": 1.5}  # fmt: skip
    rep = push_report(2, 7.0, payload)
    assert (rep.worker, rep.iteration, rep.now, rep.batch_size) == (2, 3, 7.0, 16)
    assert rep.comm_s == 0.375 and rep.active_s == 0.875 and rep.blocking_s == 2.0

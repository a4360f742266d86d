"""experiments.flr2sp.run_parallel and the execution flags (executor, compute device)."""

from __future__ import annotations

import json

import pytest

from experiments.common.run_cache import build_config, config_key, parse_args
from experiments.flr2sp import run_parallel


def test_execution_flags_are_parsed_and_not_part_of_the_key() -> None:
    args = parse_args("x", None, ["--executor", "batched", "--compute-device", "cpu"])
    assert dict(args.execution) == {"executor": "batched", "compute_device": "cpu"}
    plain = build_config("training", "smoke", 0, strategy="fl-r2sp", model="mlp")
    batched = build_config(
        "training",
        "smoke",
        0,
        strategy="fl-r2sp",
        model="mlp",
        **{"executor": "batched", "compute_device": "cpu", "executor_workers": 2},
    )
    assert batched.executor == "batched"  # the run is computed as asked ...
    assert config_key(batched) == config_key(plain)  # ... and found under the same key
    other = build_config("training", "smoke", 0, strategy="fl-r2sp", model="mlp", lr=0.5)
    assert config_key(other) != config_key(plain)


def test_kernel_flags_reach_the_run_config_and_not_the_key() -> None:
    argv = ["--executor-conv", "bmm", "--executor-compile", "default", "--executor-cuda-graphs"]
    picked = dict(parse_args("x", None, argv).execution)
    assert picked == {
        "executor_conv": "bmm",
        "executor_compile": "default",
        "executor_cuda_graphs": True,
    }
    plain = build_config("training", "smoke", 0, strategy="fl-r2sp", model="mlp")
    kernels = build_config("training", "smoke", 0, strategy="fl-r2sp", model="mlp", **picked)
    assert (kernels.executor_conv, kernels.executor_compile) == ("bmm", "default")
    assert kernels.executor_cuda_graphs is True
    assert config_key(kernels) == config_key(plain)


def test_no_execution_flags_leave_the_run_config_alone() -> None:
    assert parse_args("x", None, []).execution == ()


def test_tasks_are_seed_major_and_unknown_names_refused() -> None:
    args = parse_args("run_parallel", None, ["--scale", "smoke", "--seeds", "0,1"])
    got = run_parallel.tasks(args, ["bsp", "fl-r2sp"], ["paper"])
    assert got == [
        ("scheme", "bsp", 0, "mlp"),
        ("scheme", "fl-r2sp", 0, "mlp"),
        ("scoring", "paper", 0, "mlp"),
        ("scheme", "bsp", 1, "mlp"),
        ("scheme", "fl-r2sp", 1, "mlp"),
        ("scoring", "paper", 1, "mlp"),
    ]
    with pytest.raises(SystemExit, match="unknown scheme"):
        run_parallel.tasks(args, ["bsq"], [])


def test_a_run_lands_in_the_cache_the_item_scripts_read(tmp_path) -> None:
    argv = ["--scale", "smoke", "--seeds", "0", "--schemes", "bsp", "--jobs", "1"]
    assert run_parallel.main([*argv, "--out", str(tmp_path), "--executor", "batched"]) == 0
    (rec_path,) = (tmp_path / "_runs").glob("r-bsp-mlp-s0-*.json")
    rec = json.loads(rec_path.read_text())
    assert rec["config"]["executor"] == "batched"
    from experiments.flr2sp.fig15 import scheme_run

    args = parse_args("fig15", None, ["--scale", "smoke", "--out", str(tmp_path)])
    cached = scheme_run(args, 0, "mlp", "bsp", cached_only=True)
    assert cached is not None and cached["key"] == rec["key"]


def test_wall_limit_reports_what_did_not_finish(tmp_path, capsys) -> None:
    argv = ["--scale", "smoke", "--seeds", "0", "--schemes", "bsp", "--jobs", "1"]
    assert run_parallel.main([*argv, "--out", str(tmp_path), "--wall-limit", "0.01"]) == 1
    assert "scheme bsp mlp seed 0 (wall limit)" in capsys.readouterr().err
    assert not list((tmp_path / "_runs").glob("*.json")) if (tmp_path / "_runs").exists() else True


def test_filter_cases_and_round_caps_are_runs_of_their_own(tmp_path) -> None:
    argv = ["--scale", "smoke", "--seeds", "0", "--jobs", "1", "--out", str(tmp_path)]
    assert run_parallel.main([*argv, "--schemes", "fl-r2sp-oracle,bsp", "--rounds", "2"]) == 0
    names = sorted(p.name.split("-s0-")[0] for p in (tmp_path / "_runs").glob("*.json"))
    assert names == [
        "r-bsp-mlp-rounds2",
        "r-fl-r2sp-mlp-outlierfilterTrue-outlierruleoracle-partitionerpaper-rounds2",
    ]
    rec = json.loads(next((tmp_path / "_runs").glob("r-fl-r2sp-*.json")).read_text())
    assert rec["config"]["outlier-rule"] == "oracle"
    bsp = json.loads(next((tmp_path / "_runs").glob("r-bsp-*.json")).read_text())
    capped = build_config("training", "smoke", 0, strategy="bsp", model="mlp", rounds=2)
    assert bsp["config"]["max-updates"] == capped.max_updates

"""RunConfig: defaults agree with pyproject, bad values fail with clear messages."""

from __future__ import annotations

import tomllib

import pytest

from fl_r2sp.fl.config import RunConfig
from tests.paths import REPO

ROOT = REPO


def test_pyproject_declares_every_key_with_the_same_default() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = data["tool"]["flwr"]["app"]["config"]
    assert declared == RunConfig.keys()


def test_round_trip_and_coercion() -> None:
    cfg = RunConfig.from_run_config({"fraction": 1, "num-groups": 2.0, "strict-order": "false"})
    assert cfg.fraction == 1.0 and cfg.num_groups == 2 and cfg.strict_order is False
    assert RunConfig.from_run_config(cfg.to_run_config()) == cfg


def test_group_size_overrides_num_groups() -> None:
    assert RunConfig(num_partitions=128, group_size=16).groups == 8


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"fraction": 0.0}, "fraction"),
        ({"fraction": 1.5}, "fraction"),
        ({"num_groups": 40, "num_partitions": 32}, "more groups than clients"),
        ({"gap_factor": -0.1}, "gap-factor"),
        ({"strategy": "fedprox"}, "strategy"),
        ({"dataset": "mnist"}, "dataset"),
        ({"alpha": 0.0}, "alpha"),
        ({"outlier_fraction": 1.0}, "outlier-fraction"),
        ({"max_updates": 0}, "no stop condition"),
    ],
)
def test_invalid_values_are_rejected_with_the_key_named(changes: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        RunConfig().replace(**changes)


def test_unknown_key_lists_known_keys() -> None:
    with pytest.raises(ValueError, match="unknown run-config key 'fractoin'.*fraction"):
        RunConfig.from_run_config({"fractoin": 0.5})


def test_wrong_types_are_rejected() -> None:
    with pytest.raises(ValueError, match="expected an integer"):
        RunConfig.from_run_config({"num-groups": 2.5})
    with pytest.raises(ValueError, match="expected a number"):
        RunConfig.from_run_config({"fraction": "half"})

"""The scripts check the run config before Flower sees it; chaos.py lets the user's keys win."""

from __future__ import annotations

from pathlib import Path

import pytest

from fl_r2sp.flower.run_config_check import check_run_config
from tests.scripts.test_chaos_report import load_chaos


def test_deploy_local_refuses_a_bad_key_before_starting_anything(capsys) -> None:
    deploy_local = load_chaos().dl
    with pytest.raises(SystemExit) as exit_:
        deploy_local.parse_args(["--num-supernodes", "2", "--run-config", "num-groups='abc'"])
    assert exit_.value.code == 2
    assert "num-groups='abc': expected an integer" in capsys.readouterr().err
    args = deploy_local.parse_args(["--num-supernodes", "8", "--run-config", "clock='virtual'"])
    assert args.overrides == {"clock": "virtual", "num-partitions": 8}  # the user's key wins


def test_chaos_merges_the_users_keys_over_its_own(tmp_path: Path) -> None:
    chaos = load_chaos()
    args = chaos.parse_args(["--run-config", "job-timeout=300 local-iterations=2"])
    keys = chaos.run_config(args, tmp_path)
    assert keys["job-timeout"] == 300 and keys["local-iterations"] == 2
    assert keys["attack"] == chaos.ATTACK and keys["clock"] == "wall"
    check_run_config(keys)


def test_deploy_local_and_chaos_refuse_a_token_flwr_would_drop(capsys, tmp_path: Path) -> None:
    chaos = load_chaos()
    with pytest.raises(SystemExit) as exit_:
        chaos.dl.parse_args(["--num-supernodes", "2", "--run-config",
                             "num-groups=2 max-updates=8 extra"])  # fmt: skip
    assert exit_.value.code == 2
    assert "'extra' is not a key=value pair" in capsys.readouterr().err
    args = chaos.parse_args(["--run-config", "num-groups= 4"])
    with pytest.raises(ValueError, match="'num-groups=' is not a key=value pair"):
        chaos.run_config(args, tmp_path)

"""``scripts/deploy_local.py --app`` with another Flower app: its own config keys are checked."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from tests.paths import REPO

EXAMPLE = REPO / "examples" / "flower_app"


def deploy_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "deploy_local", REPO / "scripts" / "deploy_local.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_user_app_gets_our_keys_only_where_it_declares_them() -> None:
    base = {"clock": "wall", "num-partitions": 4, "max-updates": 3}  # max-updates: not declared
    got = deploy_script().user_app_overrides(EXAMPLE, base, "strategy='fedbuff' lr=0.1")
    assert got == {"clock": "wall", "num-partitions": 4, "strategy": "fedbuff", "lr": 0.1}


def test_a_key_the_user_app_does_not_declare_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="'num-groupz' is not in .*declared: .*num-groups"):
        deploy_script().user_app_overrides(EXAMPLE, {}, "num-groupz=2")


def test_our_own_app_keeps_the_full_run_config_check(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        deploy_script().parse_args(["--run-config", "lr=0.1 strategy='no-such'"])
    assert "strategy" in capsys.readouterr().err

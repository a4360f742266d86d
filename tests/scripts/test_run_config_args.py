"""The scripts check the run config before Flower sees it; chaos.py lets the user's keys win."""

from __future__ import annotations

from pathlib import Path

import pytest

from fl_r2sp.fl.flower.run_config_check import check_run_config
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


def test_a_stranger_revoked_by_close_registration_is_refused_not_a_false_alarm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from fl_r2sp.fl.flower.pki import NodeKey
    from fl_r2sp.fl.flower.secure_deploy import Intruder

    dl = load_chaos().dl
    public = tmp_path / "stranger.pub"
    public.write_text(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBmX5kKZ8Qm2r9cXoTt9x0u5m2h1f3o8yY5sQk0j7nQb x\n"
    )
    key = NodeKey(private=tmp_path / "stranger", public=public)
    (tmp_path / "intruder-stranger.log").write_text("INFO : SuperNode ID: 77\n")  # it joined
    monkeypatch.setattr(dl, "listed_nodes", lambda *a: {1: "online", 2: "online", 77: "offline"})
    intruders = [Intruder("stranger", (), key)]

    def judge(revoked: list[int]) -> int:
        seen = dl.Seen(tmp_path, "run output naming no node", [1, 2], {"stranger": 77}, revoked)
        return dl.check_intruders({}, tmp_path, intruders, seen, 2)

    assert judge([77]) == 0  # revoked before the ServerApp could name it: the defence worked
    assert "intruder stranger: refused (node 77: its registration was revoked" in (
        capsys.readouterr().out
    )
    assert judge([]) == 3  # not revoked and joined: still an alarm
    assert "JOINED, not refused" in capsys.readouterr().out

"""Bad run configs are refused naming the key, before Flower sees them and in the ServerApp."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from fl_r2sp.fl.flower import run_config_check as rcc
from fl_r2sp.fl.flower.server_app import main as server_main


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("num-group=3", ["'num-group'", "did you mean 'num-groups'", "accepted keys:", "seed"]),
        ("num-groups='abc'", ["num-groups='abc'", "expected an integer"]),
        ("fraction='half'", ["fraction='half'", "expected a number"]),
        ("plots='maybe'", ["plots='maybe'", "expected true or false"]),
        ("outlier-filter='yes'", ["outlier-filter='yes'", "expected true or false"]),
        ("plots=1", ["plots=1", "expected true or false"]),
        ("group-size=-2", ["group-size=-2", ">= 0"]),
        ("attack='sign-flip@3,40' num-partitions=32", ["client ids [40]", "0..31"]),
        ("convergence-tol=-1.0", ["convergence-tol=-1.0", ">= 0"]),
        ("attack='bogus'", ["attack term 'bogus'", "sign-flip"]),
        ("delay='weird(x=1)'", ["delay='weird(x=1)'"]),
        ("dropout='bernoulli(p=2)'", ["dropout='bernoulli(p=2)'", "probability"]),
        ("network='mars'", ["network='mars'"]),
        ("device='fast'", ["device='fast'"]),
        ("clock='sundial'", ["clock='sundial'", "'wall'"]),
        ("strategy='fedprox'", ["strategy", "fedprox"]),
    ],
)
def test_a_bad_key_or_value_is_named(text: str, words: list[str]) -> None:
    with pytest.raises(ValueError) as err:
        rcc.check_run_config(rcc.parse_overrides(text))
    assert all(w in str(err.value) for w in words), str(err.value)


def test_the_users_keys_win_over_the_callers_and_survive_the_text_form() -> None:
    merged = rcc.merge_overrides(
        {"job-timeout": 120.0, "attack": "nan@2", "plots": False}, "job-timeout=300 seed=4"
    )
    assert merged == {"job-timeout": 300, "attack": "nan@2", "plots": False, "seed": 4}
    assert rcc.parse_overrides(rcc.format_overrides(merged)) == merged
    assert rcc.check_run_config(merged).job_timeout == 300.0


def test_the_command_line_check_exits_2_naming_the_key(capsys) -> None:
    assert rcc.main(["--stream", "--run-config", "strategy='bsp'"]) == 0
    assert rcc.main(["--run-config", "strategy='bsp'", "--run-config=num-grops=2"]) == 2
    assert "'num-grops'" in capsys.readouterr().err


def test_the_server_app_checks_every_key_first() -> None:
    context = SimpleNamespace(run_config={"attack": "bogus"})
    with pytest.raises(ValueError, match="attack term 'bogus'"):
        server_main(None, context)  # the grid is never touched


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("num-groups= 4", "'num-groups='"),
        ("num-groups = 2", "'num-groups'"),
        ("lr=", "'lr='"),
        ("extra", "'extra'"),
        ("num-groups=2 max-updates=8 extra", "'extra'"),
    ],
)
def test_a_token_that_flwr_would_drop_is_refused_naming_it(text: str, token: str) -> None:
    with pytest.raises(ValueError, match="is not a key=value pair") as err:
        rcc.parse_overrides(text)
    assert f"{token} is not a key=value pair" in str(err.value)
    assert rcc.main(["--run-config", text]) == 2  # what scripts/main.sh runs first


def test_well_formed_pairs_pass_whatever_their_quoting() -> None:
    text = "num-groups=2 attack='nan@2,sign-flip@3' delay=\"lognormal(mu=0.1, sigma=0.5)\""
    assert rcc.malformed_tokens(text) == []
    assert rcc.parse_overrides(text)["delay"] == "lognormal(mu=0.1, sigma=0.5)"


def test_resume_from_is_checked_before_a_deployment(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid run config resume-from=.*no checkpoint"):
        rcc.check_run_config({"resume-from": str(tmp_path)})  # an absolute folder, no checkpoint
    with pytest.raises(ValueError, match="invalid run config resume-from="):
        rcc.check_run_config({"resume-from": str(tmp_path / "nowhere")})
    assert rcc.check_run_config({"resume-from": "a/relative/path/not/here"})  # the ServerApp's

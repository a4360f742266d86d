"""The spec keys are parsed before anything runs, in process too, and named when bad."""

from __future__ import annotations

from pathlib import Path

import pytest

from fl_r2sp.fl.clients.specs import check_specs
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server.runner import run

BAD = [
    ({"delay": "bogus"}, "invalid run config delay='bogus': unknown delay distribution"),
    ({"delay": "lognormal(mu=x)"}, "invalid run config delay='lognormal(mu=x)'"),
    ({"dropout": "sometimes"}, "invalid run config dropout='sometimes'"),
    ({"device": "fast"}, "invalid run config device='fast'"),
    ({"network": "dialup"}, "invalid run config network='dialup'"),
    ({"attack": "sign-flip@3,7"}, "client ids [7] are outside 0..5"),
]


@pytest.mark.parametrize(("change", "words"), BAD)
def test_a_bad_spec_is_named_by_the_check(change: dict, words: str) -> None:
    with pytest.raises(ValueError) as err:
        check_specs(RunConfig(num_partitions=6, **change))
    assert words in str(err.value)


@pytest.mark.parametrize(("change", "words"), BAD[:2])
def test_the_in_process_runner_names_a_bad_spec_before_writing(
    tmp_path: Path, change: dict, words: str
) -> None:
    cfg = RunConfig(num_partitions=6, num_groups=2, run_dir=str(tmp_path), **change)
    with pytest.raises(ValueError) as err:
        run(cfg, progress=False)
    assert words in str(err.value)
    assert list(tmp_path.iterdir()) == []  # refused before any run folder


def test_the_defaults_pass() -> None:
    check_specs(RunConfig())

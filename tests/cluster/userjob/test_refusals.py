"""A job that breaks the contract is refused before any rank starts: exit 2, naming the path
and what was wrong; no run folder is made."""

from __future__ import annotations

from pathlib import Path

import pytest

import fl_r2sp.cluster as cluster
from fl_r2sp.cluster.__main__ import main
from fl_r2sp.importpath import ImportPathError

JOB = "tests.cluster.userjob.job"
GOOD = {"--model": f"{JOB}:tiny_net", "--dataset": f"{JOB}:blobs"}
BASE = ["--scheme", "asp", "--workers", "2", "--batch-size", "4", "--iterations", "2",
        "--timeout", "10", "--run-timeout", "60", "--progress", "0", "--no-plots"]  # fmt: skip

CASES = [
    ({"--model": "tests.cluster.userjob.nosuch:net"},
     "model 'tests.cluster.userjob.nosuch:net': cannot import 'tests.cluster.userjob.nosuch'"),
    ({"--model": f"{JOB}:no_such_factory"},
     f"model '{JOB}:no_such_factory': module '{JOB}' has no attribute 'no_such_factory'"),
    ({"--model": f"{JOB}:NOT_CALLABLE"}, f"model '{JOB}:NOT_CALLABLE': is a int, not a callable"),
    ({"--model": f"{JOB}:not_a_module"},
     f"model '{JOB}:not_a_module': returned a dict, not a torch.nn.Module"),
    ({"--dataset": f"{JOB}:wide_blobs"},
     f"dataset '{JOB}:wide_blobs': its samples do not fit model '{JOB}:tiny_net'"),
    ({"--dataset": f"{JOB}:tiny_net"},
     f"dataset '{JOB}:tiny_net': cannot draw a batch"),
    ({"--loss": f"{JOB}:vector_loss"},
     f"loss '{JOB}:vector_loss': must return a scalar tensor"),
    ({"--evaluate": f"{JOB}:nothing_here"},
     f"evaluate '{JOB}:nothing_here': module '{JOB}' has no attribute 'nothing_here'"),
    ({"--loss": "smooth_loss"},
     "loss 'smooth_loss': not of the form 'package.module:attribute'"),
    ({"--dataset": "synthetic"},
     f"dataset 'synthetic' is built for the built-in models; give model '{JOB}:tiny_net' its own"),
]  # fmt: skip


IDS = [f"{c[1].split(' ')[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize(("flags", "message"), CASES, ids=IDS)
def test_a_bad_factory_exits_2_naming_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: dict[str, str], message: str
) -> None:
    argv = [*BASE, "--run-dir", str(tmp_path)]
    for flag, value in {**GOOD, **flags}.items():
        argv += [flag, value]
    try:
        code = main(argv)
    except SystemExit as exc:  # refused while parsing (the model is built to count its size)
        code = exc.code  # type: ignore[assignment]
    assert code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no rank started, no run folder


def test_a_scheme_that_resizes_batches_refuses_an_iterable_dataset(tmp_path: Path) -> None:
    with pytest.raises(ImportPathError, match=f"dataset '{JOB}:batches'.*--tuning idle resizes"):
        cluster.train(model=f"{JOB}:tiny_net", dataset=f"{JOB}:batches", scheme="r2sp",
                      tuning="idle", workers=2, run_dir=str(tmp_path))  # fmt: skip
    assert not any(tmp_path.iterdir())


def test_the_api_refuses_an_unknown_knob_and_a_nested_factory() -> None:
    with pytest.raises(TypeError, match=r"unknown cluster knobs \['wokers'\]"):
        cluster.make_config(model=f"{JOB}:tiny_net", dataset=f"{JOB}:blobs", wokers=3)

    def local_net() -> None:  # not reachable by import: rank processes could not build it
        return None

    with pytest.raises(ImportPathError, match="model 'local_net': not importable"):
        cluster.make_config(model=local_net, dataset=f"{JOB}:blobs")

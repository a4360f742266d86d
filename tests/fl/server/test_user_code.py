"""A user's own model and dataset, imported by path, run as a built-in one does.

The model and data below are the user's code: they live outside the package and reach the
runner only as the import paths ``tests.fl.server.test_user_code:build`` / ``:load``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from fl_r2sp.datasets.base import ArrayDataset
from fl_r2sp.datasets.federated import federated_data
from fl_r2sp.datasets.user import _load_both, load_user_dataset
from fl_r2sp.emulation.profiles import estimated_iteration_seconds
from fl_r2sp.fl.clients.runtime import ClientRuntime, runtime_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.run_config_check import main as check_main
from fl_r2sp.fl.flower.server_app import _record_failed_start
from fl_r2sp.fl.server.runner import run
from fl_r2sp.importpath import ImportPathError
from fl_r2sp.telemetry.rundir import is_complete
from tests.fl.server.test_checkpoint import Killed, evals, kill_after_save, only_dir
from tests.paths import REPO

HERE = "tests.fl.server.test_user_code"
MODEL, DATA = f"{HERE}:build", f"{HERE}:load"
FEATURES, CLASSES = 8, 3

# --- the user's code ---------------------------------------------------------------------

#: How often the user's factories ran in this process (resume must run them again).
CALLS = {"build": 0, "load": 0}


class TinyNet(nn.Module):
    """A user's model: 8 -> 16 -> classes, with a float32 BatchNorm-free body."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def build(num_classes: int, seed: int) -> nn.Module:
    CALLS["build"] += 1
    return TinyNet(num_classes)


def load(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Three Gaussian blobs in 8 dimensions; a fixed generator per split."""
    CALLS["load"] += 1
    rng = np.random.default_rng(0 if split == "train" else 1)
    n = 240 if split == "train" else 90
    y = np.arange(n) % CLASSES
    centres = np.eye(CLASSES, FEATURES) * 3.0
    return centres[y] + rng.normal(size=(n, FEATURES)), y


# Broken user code, one fault each.
NOT_CALLABLE = 42


def returns_dict(num_classes: int, seed: int) -> dict[str, int]:
    return {"not": 1}


def wrong_logits(num_classes: int, seed: int) -> nn.Module:
    return nn.Linear(FEATURES, num_classes + 1)


def float64_model(num_classes: int, seed: int) -> nn.Module:
    return nn.Linear(FEATURES, num_classes).double()


def unseeded_model(num_classes: int, seed: int) -> nn.Module:
    model = nn.Linear(FEATURES, num_classes)
    with torch.no_grad():  # numpy's fresh entropy: a different model every call
        model.weight.copy_(torch.from_numpy(np.random.default_rng().normal(size=(3, 8))))
    return model


def raises(num_classes: int, seed: int) -> nn.Module:
    raise RuntimeError("CUDA out of memory (pretend)")


def float_labels(split: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = load(split)
    return x, y.astype(np.float64)


def ragged(split: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = load(split)
    return x, y[:-1]


def wide_test_split(split: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = load(split)
    return (x if split == "train" else np.hstack([x, x])), y


def returns_number(split: str) -> int:
    return 7


class Pairs:
    """A map-style dataset of (tensor, int) pairs, as torchvision's are."""

    def __init__(self, split: str) -> None:
        self.x, self.y = load(split)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return torch.tensor(self.x[i], dtype=torch.float32), int(self.y[i])


def with_classes(split: str) -> ArrayDataset:
    x, y = load(split)
    return ArrayDataset(x.astype(np.float32), y, num_classes=5, groups=None, name=split)


# --- the runs ----------------------------------------------------------------------------


def user_cfg(tmp_path: Path, **kw: object) -> RunConfig:
    base: dict[str, object] = dict(
        model=MODEL,
        dataset=DATA,
        partitioner="dirichlet",
        num_partitions=6,
        num_groups=2,
        local_iterations=4,
        lr=0.3,
        max_updates=8,
        eval_every=2,
        plots=False,
        run_dir=str(tmp_path),
        dropout="bernoulli(p=0.2,down=0.5)",
        job_timeout=60.0,
    )
    base.update(kw)
    return RunConfig(**base)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test starts as a new process would: no memoised data, runtime or module state."""
    for cached in (_load_both, federated_data, runtime_for):
        cached.cache_clear()
    yield
    for cached in (_load_both, federated_data, runtime_for):
        cached.cache_clear()


def test_user_model_and_data_learn_in_virtual_time_and_resume_bit_identically(
    tmp_path: Path, monkeypatch
) -> None:
    cfg = user_cfg(tmp_path / "whole", outlier_filter=True, plots=True)
    whole = run(cfg, progress=False)
    assert whole.summary["status"] == "completed" and whole.summary["global_updates"] == 8
    # Separable blobs: it learned (chance 1/3; seeds 0-3 end at 0.96-0.99, measured).
    assert whole.history[-1]["accuracy"] > 0.9
    assert (whole.run_dir / "config.json").is_file() and list(whole.run_dir.glob("*.png"))
    assert whole.run_dir.name.startswith("fl-r2sp-load-s0-")  # no ':' in folder names

    ckpt = user_cfg(tmp_path / "ckpt", outlier_filter=True, plots=True, checkpoint_every=3)
    with monkeypatch.context() as m:
        kill_after_save(m, at_version=3)
        with pytest.raises(Killed):
            run(ckpt, progress=False)
    folder = only_dir(tmp_path / "ckpt")
    for cached in (_load_both, federated_data, runtime_for):
        cached.cache_clear()  # as a new process: the resume must import and call the paths
    before = dict(CALLS)
    resumed = run(ckpt.replace(resume_from=str(folder)), progress=False)
    assert CALLS["load"] > before["load"] and CALLS["build"] > before["build"]
    assert is_complete(folder)
    assert resumed.weights.tobytes() == whole.weights.tobytes()
    assert evals(resumed) == evals(whole)


def test_virtual_time_of_a_user_model_comes_from_its_macs(tmp_path: Path) -> None:
    runtime = ClientRuntime(user_cfg(tmp_path, device="profile"))
    macs = FEATURES * 16 + 16 * CLASSES  # two matrix products per example
    expected = estimated_iteration_seconds(macs) * runtime.cfg.local_iterations
    assert runtime.compute_seconds(0) == pytest.approx(expected)


def test_every_executor_runs_the_user_model(tmp_path: Path) -> None:
    kw = dict(write=False, progress=False)
    serial = run(user_cfg(tmp_path, dropout="none", max_updates=4), **kw)  # type: ignore[arg-type]
    # Worker processes start empty: they import the user's path themselves.
    procs = run(
        user_cfg(tmp_path, dropout="none", max_updates=4, executor="processes", executor_workers=2),
        **kw,  # type: ignore[arg-type]
    )
    assert np.array_equal(procs.weights, serial.weights)
    batched = run(
        user_cfg(tmp_path, dropout="none", max_updates=4, executor="batched", compute_device="cpu"),
        **kw,  # type: ignore[arg-type]
    )
    assert np.abs(batched.weights - serial.weights).max() <= 1e-5


def test_a_dataset_of_pairs_and_an_array_dataset_meet_the_contract() -> None:
    pairs = load_user_dataset(f"{HERE}:Pairs", "train")
    x, y = load("train")
    assert pairs.x.dtype == np.float32 and np.array_equal(pairs.x, x.astype(np.float32))
    assert np.array_equal(pairs.y, y) and pairs.num_classes == CLASSES
    # An ArrayDataset keeps its own class count (a class may be absent from the data).
    assert load_user_dataset(f"{HERE}:with_classes", "test").num_classes == 5


BAD = [
    (
        {"model": "tests.fl.server.no_such_module:build"},
        "cannot import 'tests.fl.server.no_such_module'",
    ),
    ({"model": f"{HERE}:biuld"}, "no attribute 'biuld'"),
    ({"model": f"{HERE}:NOT_CALLABLE"}, "is a int, not a callable"),
    ({"model": f"{HERE}:"}, "not of the form 'package.module:attribute'"),
    ({"model": f"{HERE}:returns_dict"}, "returned a dict, not a torch.nn.Module"),
    ({"model": f"{HERE}:wrong_logits"}, "expected logits (2, 3)"),
    ({"model": f"{HERE}:float64_model"}, "is torch.float64; floating tensors must be float32"),
    ({"model": f"{HERE}:unseeded_model"}, "two builds with the same seed differ"),
    ({"model": f"{HERE}:raises"}, "raised RuntimeError: CUDA out of memory"),
    ({"dataset": f"{HERE}:float_labels"}, "labels are float64"),
    ({"dataset": f"{HERE}:ragged"}, "y has shape (239,)"),
    ({"dataset": f"{HERE}:wide_test_split"}, "train inputs are (8,) but test inputs"),
    ({"dataset": f"{HERE}:returns_number"}, "returned a int; expected an ArrayDataset"),
    ({"model": "mlp"}, "its inputs are (8,) but model 'mlp' takes (64,)"),
]


@pytest.mark.parametrize(("change", "problem"), BAD, ids=[p for _, p in BAD])
def test_a_broken_path_is_refused_before_anything_runs_naming_it(
    tmp_path: Path, change: dict[str, str], problem: str
) -> None:
    cfg = user_cfg(tmp_path / "runs").replace(**change)
    named = next(iter(change.values()))
    with pytest.raises(ValueError) as err:
        run(cfg, progress=False)
    assert problem in str(err.value)
    if named != "mlp":
        key = next(iter(change))
        assert isinstance(err.value, ImportPathError)
        assert str(err.value).startswith(f"{key} '{named}': ")
    else:
        assert str(err.value).startswith(f"dataset '{DATA}': ")
    assert not (tmp_path / "runs").exists()  # nothing started, nothing written


def test_auto_has_no_default_model_for_a_user_dataset(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"model='auto' has no default for the user dataset"):
        run(user_cfg(tmp_path, model="auto"), progress=False)


def test_the_scripts_check_exits_2_naming_the_path(capsys) -> None:
    bad = f"{HERE}:returns_dict"
    assert check_main(["--run-config", f"model='{bad}' dataset='{DATA}'"]) == 2
    assert f"model '{bad}': factory returned a dict" in capsys.readouterr().err
    assert check_main(["--run-config", f"model='{MODEL}' dataset='{DATA}'"]) == 0


def test_main_sh_s_check_exits_2_in_a_fresh_process() -> None:
    # What scripts/main.sh runs before `flwr run`, as its own process (a fresh import).
    bad = f"{HERE}:biuld"
    proc = subprocess.run(
        [sys.executable, "-m", "fl_r2sp.fl.flower.run_config_check"]
        + ["--run-config", f"model='{bad}' dataset='{DATA}'"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"model '{bad}': module '{HERE}' has no attribute 'biuld'" in proc.stderr


def test_deploy_local_exits_2_naming_the_path(capsys) -> None:
    from tests.scripts.test_chaos_report import load_chaos

    deploy_local = load_chaos().dl
    bad = f"{HERE}:float_labels"
    with pytest.raises(SystemExit) as exit_:
        deploy_local.parse_args(
            ["--num-supernodes", "4", "--run-config", f"model='{MODEL}' dataset='{bad}'"]
        )
    assert exit_.value.code == 2
    assert f"dataset '{bad}': train labels are float64" in capsys.readouterr().err


def test_the_server_app_leaves_a_failed_folder_under_a_bare_flwr_run(tmp_path, caplog) -> None:
    bad = f"{HERE}:wrong_logits"
    values = {"model": bad, "dataset": DATA, "run-dir": str(tmp_path)}
    with pytest.raises(ValueError) as err:
        from fl_r2sp.fl.flower.run_config_check import check_run_config

        check_run_config(values)
    _record_failed_start(values, err.value)
    summary = json.loads((only_dir(tmp_path) / "summary.json").read_text())["summary"]
    assert summary["status"] == "failed" and summary["failure"].startswith(f"model '{bad}': ")
    assert f"model '{bad}'" in caplog.text

"""A built-in model and dataset given by their factories' import paths are the run of their
registry names, bit for bit (same seed): the names are short for those paths."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import torch

import fl_r2sp.cluster as cluster
from fl_r2sp.cluster.userjob.catalog import dataset_factory_path, model_factory_path

KNOBS: dict[str, Any] = {
    "scheme": "bsp", "workers": 2, "servers": 1, "batch_size": 8, "iterations": 5,
    "timeout": 20.0, "run_timeout": 120.0, "seed": 4, "eval_samples": 200, "progress": 0.0,
    "no_plots": True,
}  # fmt: skip


def _losses(run_dir: Path) -> list[tuple[str, str, str]]:
    with open(run_dir / "workers.csv", newline="") as fh:
        return sorted((r["worker"], r["iteration"], r["loss"]) for r in csv.DictReader(fh))


def test_a_builtin_factory_path_reproduces_its_name_bit_for_bit(tmp_path: Path) -> None:
    model, dataset = model_factory_path("mlp"), dataset_factory_path("synthetic", "mlp")
    assert model == "fl_r2sp.cluster.userjob.builtin:mlp"
    assert dataset == "fl_r2sp.cluster.userjob.builtin:synthetic_flat"
    by_name = cluster.train(model="mlp", dataset="synthetic", run_dir=str(tmp_path / "a"),
                            **KNOBS)  # fmt: skip
    by_path = cluster.train(model=model, dataset=dataset, run_dir=str(tmp_path / "b"), **KNOBS)
    a, b = by_name.state_dict, by_path.state_dict
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    assert _losses(by_name.run_dir) == _losses(by_path.run_dir)
    assert by_name.summary["test_accuracy"] == by_path.summary["test_accuracy"] is not None
    # the same model seeded otherwise trains to other weights: the comparison can fail
    other = cluster.train(model=model, dataset=dataset, run_dir=str(tmp_path / "c"),
                          **{**KNOBS, "seed": 5})  # fmt: skip
    assert not torch.equal(other.state_dict["net.1.weight"], a["net.1.weight"])

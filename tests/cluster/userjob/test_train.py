"""A user's own job (``job.py`` beside this file: a network, a map-style dataset, a loss and an
evaluation defined outside the package) trains with one scheme of every family, through the
command line by import path and through the Python API; each run writes a complete folder
whose telemetry shows the scheme's own behaviour, and its weights load into the user's module.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import fl_r2sp.cluster as cluster
from fl_r2sp.cluster.runtime.ps.worker import worker_seed
from tests.cluster.userjob import job

#: Seconds after which a run is a hang (not a timing assertion).
HANG_S = 300.0
JOB = "tests.cluster.userjob.job"
SEED = 1
KNOBS: dict[str, Any] = {"batch_size": 8, "iterations": 6, "timeout": 20.0,
                         "run_timeout": 120.0, "seed": SEED}  # fmt: skip
PS_QUIET: dict[str, Any] = {"progress": 0.0, "no_plots": True}
RACKS = ((0, 1), (2,))


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _r2sp_grants_round_robin(run_dir: Path) -> None:
    order = [int(r["worker"]) for r in _rows(run_dir / "permissions.csv")
             if r["event"] == "permission"]  # fmt: skip
    assert len(order) >= 3 * 5
    assert order == [i % 3 for i in range(len(order))]  # R²SP's fixed round-robin order


def _osp_syncs_layers_in_two_stages(run_dir: Path) -> None:
    rows = _rows(run_dir / "workers.csv")
    assert len(rows) == 2 * 6
    assert all(r["gib_wait_s"] and r["rs_s"] and r["ics_layers"] != "" for r in rows)


def _partial_reduces_in_groups_of_two(run_dir: Path) -> None:
    launches = [json.loads(r["members"]) for r in _rows(run_dir / "permissions.csv")
                if r["event"] == "launch"]  # fmt: skip
    assert launches and all(len(set(m)) == 2 for m in launches)  # p = 2 of the 3 workers
    assert {w for m in launches for w in m} == {0, 1, 2}


def _dssync_regroups_every_two(run_dir: Path) -> None:
    bounds = [r for r in _rows(run_dir / "permissions.csv") if r["event"] == "boundary"]
    assert [int(r["at"]) for r in bounds if int(r["at"]) >= 0] == [2, 4]
    groups = {r["group"] for r in _rows(run_dir / "workers.csv")}
    assert groups and all(len(g.split("-")) < 3 for g in groups)  # sub-groups, not all three


def _hierarchical_reduces_everyone(run_dir: Path) -> None:
    rows = _rows(run_dir / "workers.csv")
    assert len(rows) == 3 * 6 and {(r["group"], r["group_size"]) for r in rows} == {("0-1-2", "3")}


def _gossip_syncs_every_iteration(run_dir: Path) -> None:
    rows = _rows(run_dir / "workers.csv")
    assert len(rows) == 3 * 6 and all(r["ok"] == "True" and int(r["group_size"]) >= 2
                                      for r in rows)  # fmt: skip


#: scheme -> (its knobs, the check of its own behaviour in the run folder)
FAMILIES: dict[str, tuple[dict[str, Any], Callable[[Path], None]]] = {
    "r2sp": ({"workers": 3, "servers": 1, **PS_QUIET}, _r2sp_grants_round_robin),
    "osp": ({"workers": 2, "servers": 1, "momentum": 0.0, **PS_QUIET},
            _osp_syncs_layers_in_two_stages),
    "partial": ({"workers": 3, "group_min": 2}, _partial_reduces_in_groups_of_two),
    "dssync": ({"workers": 3, "racks": RACKS, "regroup_period": 2}, _dssync_regroups_every_two),
    "hierarchical": ({"workers": 3, "racks": RACKS}, _hierarchical_reduces_everyone),
    "gossip": ({"workers": 3}, _gossip_syncs_every_iteration),
}  # fmt: skip


def _flag_values(knobs: dict[str, Any]) -> list[str]:
    """The knobs as command-line flags."""
    out: list[str] = []
    for name, value in knobs.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif name == "racks":
            out += [flag, "/".join(",".join(map(str, r)) for r in value)]
        else:
            out += [flag, str(value)]
    return out


def _first_loss_by_hand() -> float:
    """Worker 0's first loss, rebuilt without the package's job code: the seeded TinyNet, the
    worker's seeded permutation of the blobs, the user's smoothed loss."""
    torch.manual_seed(SEED)
    net = job.TinyNet()
    data = job.Blobs(SEED)
    idx = torch.randperm(len(data), generator=torch.Generator().manual_seed(worker_seed(SEED, 0)))
    x, y = data.x[idx[:8]], data.y[idx[:8]]
    return float(job.smooth_loss(net(x), y).detach())


def _check_run(run_dir: Path, scheme: str, state: dict[str, torch.Tensor]) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "ok", summary.get("reason")
    for name in ("COMPLETE", "config.json", "run.json", "workers.csv", "final_params.pt"):
        assert (run_dir / name).is_file(), name
    config = json.loads((run_dir / "config.json").read_text())
    assert f"{JOB}:tiny_net" in json.dumps(config) and f"{JOB}:smooth_loss" in json.dumps(config)
    first = [
        r for r in _rows(run_dir / "workers.csv") if (r["worker"], r["iteration"]) == ("0", "0")
    ]
    assert float(first[0]["loss"]) == pytest.approx(_first_loss_by_hand(), rel=1e-5)
    FAMILIES[scheme][1](run_dir)
    net = job.TinyNet()
    net.load_state_dict(state)  # strict: every key of the user's module, nothing else
    saved = torch.load(run_dir / "final_params.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(saved[k], v) for k, v in state.items())
    assert not torch.equal(state["body.0.weight"], _initial()["body.0.weight"])  # it trained


def _initial() -> dict[str, torch.Tensor]:
    torch.manual_seed(SEED)
    return job.TinyNet().state_dict()


@pytest.mark.parametrize("scheme", list(FAMILIES))
def test_the_python_api_trains_a_user_job(tmp_path: Path, scheme: str) -> None:
    knobs, _ = FAMILIES[scheme]
    result = cluster.train(model=job.tiny_net, dataset=job.blobs, loss=job.smooth_loss,
                           evaluate=job.accuracy, scheme=scheme, run_dir=str(tmp_path),
                           **KNOBS, **knobs)  # fmt: skip
    assert result.run_dir.parent == tmp_path and result.summary["run_dir"] == str(result.run_dir)
    _check_run(result.run_dir, scheme, result.state_dict)
    if scheme in ("r2sp", "osp"):  # the PS family evaluates on a worker: the user's metrics
        assert result.summary["evaluation"]["blob_examples"] == 120.0
        assert result.summary["test_accuracy"] == result.summary["evaluation"]["test_accuracy"]


@pytest.mark.parametrize("scheme", list(FAMILIES))
def test_the_command_line_trains_a_user_job_by_import_path(tmp_path: Path, scheme: str) -> None:
    knobs, _ = FAMILIES[scheme]
    argv = [sys.executable, "-m", "fl_r2sp.cluster", "--scheme", scheme,
            "--model", f"{JOB}:tiny_net", "--dataset", f"{JOB}:blobs",
            "--loss", f"{JOB}:smooth_loss", "--evaluate", f"{JOB}:accuracy",
            "--run-dir", str(tmp_path), *_flag_values({**KNOBS, **knobs})]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p.parent for p in tmp_path.glob("*/summary.json")]
    assert run_dir.name.startswith(f"{scheme}-tiny_net-blobs-")
    state = torch.load(run_dir / "final_params.pt", weights_only=True)["state_dict"]
    _check_run(run_dir, scheme, state)


def test_an_iterable_dataset_trains_with_its_own_batches(tmp_path: Path) -> None:
    knobs = {"workers": 2, "servers": 1, "run_dir": str(tmp_path), **KNOBS, **PS_QUIET}
    result = cluster.train(model=f"{JOB}:tiny_net", dataset=f"{JOB}:batches", scheme="asp",
                           **knobs)  # fmt: skip
    assert result.summary["status"] == "ok" and result.summary["iterations_per_worker"] == [6, 6]
    job.TinyNet().load_state_dict(result.state_dict)


@pytest.mark.parametrize(("scheme", "knobs"), [("asp", {"servers": 1, **PS_QUIET}),
                                               ("allreduce", {})])  # fmt: skip
def test_the_saved_state_dict_keeps_a_workers_batchnorm_statistics(
    tmp_path: Path, scheme: str, knobs: dict[str, Any]
) -> None:
    result = cluster.train(model=f"{JOB}:bn_net", dataset=f"{JOB}:blobs", scheme=scheme,
                           evaluate=f"{JOB}:accuracy", workers=2, run_dir=str(tmp_path),
                           **KNOBS, **knobs)  # fmt: skip
    state = result.state_dict
    job.bn_net().load_state_dict(state)
    # trained: six batches moved the running mean off its initial zeros
    assert int(state["1.num_batches_tracked"]) == 6
    assert float(state["1.running_mean"].abs().sum()) > 0.0

"""Stock Flower apps run this project's strategies, through ``flwr run`` and a deployment.

* ``examples/flower_app`` (PyTorch, as Flower's template writes it; its ClientApp imports
  nothing from ``fl_r2sp`` and has no query handler) with ``strategy`` FLR2SP and FedBuff in
  simulation: the clients get the user's ``lr``, their ``@app.evaluate()`` runs, and the
  run folder and the returned Result hold every global update;
* the same app on ``scripts/deploy_local.py`` (real SuperLink + 4 SuperNodes, wall clock);
* ``tests/e2e/numpy_app`` (Flower's NumPy template: a float64 model, no ``evaluate_fn``, no
  ``train_config``) runs every strategy in one ``flwr run``; each float64 aggregate equals
  the NumPy reference within 1e-12;
* the same NumPy app with ``@timed(app)`` in place of ``@app.train()``: its nodes answer the
  partition query (none is numbered by node id) and two runs end on the same weights, bit
  for bit.

The apps' ClientApps record nothing themselves: the test's copy of the example adds one
Flower mod that writes each message's config to a file (what a user's app receives).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fl_r2sp.fl.flower.processes import flwr_bin, local_superlink_env
from tests.e2e.progress import run_while_progressing
from tests.paths import REPO

pytestmark = pytest.mark.e2e

EXAMPLE = REPO / "examples" / "flower_app"
NUMPY_APP = REPO / "tests" / "e2e" / "numpy_app"
#: An lr no default has: the clients must have read it from train_config.
LR = 0.0625
ROUNDS = 4
RECORDING_MOD = '''

def _record(msg, context, call_next):
    """Test instrumentation: write what the ClientApp receives, then run it."""
    import json

    config = dict(msg.content["config"]) if "config" in msg.content else {{}}
    row = {{"kind": msg.metadata.message_type, "config": config}}
    with open({path!r}, "a") as fh:
        fh.write(json.dumps(row) + "\\n")
    return call_next(msg, context)
'''


@pytest.fixture(scope="module")
def sim_env(flwr_home: Path) -> dict[str, str]:
    """One environment (so one local SuperLink, on free ports) for the module's runs."""
    return local_superlink_env(flwr_home)


@pytest.fixture(scope="module")
def recording_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the example whose ClientApp records each message's config; (app, log)."""
    root = tmp_path_factory.mktemp("example")
    app, log = root / "flower_app", root / "received.jsonl"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("outputs", "__pycache__"))
    client = app / "flower_app" / "client_app.py"
    text = client.read_text()
    assert "app = ClientApp()" in text
    text = text.replace("app = ClientApp()", "app = ClientApp(mods=[_record])")
    text = text.replace("# Flower ClientApp", RECORDING_MOD.format(path=str(log)), 1)
    client.write_text(text)
    return app, log


def flwr_run(app: Path, env: dict[str, str], overrides: str) -> str:
    """``flwr run`` the app in simulation with 4 nodes; its output (exit 0 asserted)."""
    cmd = [str(flwr_bin()), "run", str(app), "--stream"]
    cmd += ["--federation-config", "num-supernodes=4", "--run-config", overrides]
    res = subprocess.run(cmd, env=env, cwd=app, capture_output=True, text=True, timeout=900)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    return out


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def check_outputs(out: Path, strategy: str) -> None:
    """Result and run folder of one run of the example: every global update is there."""
    result = json.loads((out / "result.json").read_text())
    assert result["strategy"] == strategy
    central = result["evaluate_metrics_serverapp"]
    assert sorted(map(int, central)) == list(range(ROUNDS + 1))  # update 0 = initial model
    assert all(0.0 <= row["accuracy"] <= 1.0 for row in central.values())
    federated = result["evaluate_metrics_clientapp"]  # the clients' @app.evaluate()
    assert str(ROUNDS) in federated
    assert federated[str(ROUNDS)]["num-examples"] > 0
    assert 0.0 <= federated[str(ROUNDS)]["eval_acc"] <= 1.0
    (folder,) = [p for p in (out / "runs").iterdir() if p.is_dir()]
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    assert summary["status"] == "completed" and summary["global_updates"] == ROUNDS
    assert summary["updates_accepted"] >= ROUNDS
    history = (folder / "history.csv").read_text().splitlines()
    assert [int(r.split(",")[0]) for r in history[1:]] == list(range(ROUNDS + 1))
    fed_rows = (folder / "federated_eval.csv").read_text().splitlines()
    assert fed_rows[0].startswith("version,") and fed_rows[1].startswith(f"{ROUNDS},")
    assert (out / "final_model.pt").is_file()


@pytest.mark.parametrize("strategy", ["fl-r2sp", "fedbuff"])
def test_example_app_runs_our_strategy_in_simulation(
    strategy: str, recording_app: tuple[Path, Path], sim_env: dict[str, str], tmp_path: Path
) -> None:
    app, log = recording_app
    log.unlink(missing_ok=True)
    out = tmp_path / "out"
    flwr_run(
        app,
        sim_env,
        f"strategy='{strategy}' lr={LR} num-server-rounds={ROUNDS} output-dir='{out}'",
    )
    rows = received(log)
    trains = [r["config"] for r in rows if r["kind"] == "train"]
    evaluates = [r for r in rows if r["kind"] == "evaluate"]
    assert trains and all(c["lr"] == LR for c in trains)  # the user's train_config
    assert {"job", "tag", "cid"} <= set(trains[0])  # beside the strategy's own keys
    assert len(evaluates) >= 4  # the final model, on every node
    check_outputs(out, strategy)


def test_example_app_on_a_deployment(tmp_path: Path) -> None:
    """The example on a real SuperLink + 4 SuperNodes (scripts/deploy_local.py, wall clock)."""
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "deploy_local.py"),
        "--app",
        str(EXAMPLE),
        "--num-supernodes",
        "4",
        "--timeout",
        "0",  # no wall budget: the progress watch stops it if it stops progressing
        "--flwr-home",
        str(tmp_path / "home"),
        "--run-config",
        f"strategy='fl-r2sp' lr={LR} num-server-rounds={ROUNDS} output-dir='{out}'",
    ]
    code, text = run_while_progressing(cmd, REPO)
    assert code == 0, text[-4000:]
    assert "status finished:completed at the SuperLink" in text
    config = json.loads(next((out / "runs").glob("*/config.json")).read_text())["config"]
    assert config["clock"] == "wall" and config["num-partitions"] == 4
    check_outputs(out, "fl-r2sp")


def _flat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([a.ravel() for a in arrays])


def test_numpy_app_every_strategy_keeps_float64(sim_env: dict[str, str], tmp_path: Path) -> None:
    """Each strategy's float64 aggregate equals the NumPy reference within 1e-12.

    Every client steps toward the same optimum t (IID data), so every model any strategy
    builds, whatever its schedule, is ``t + a (w0 - t)`` for one scalar a; BSP with all 4
    clients for R rounds has ``a = (1 - lr)^R`` exactly. A float32 round trip anywhere is
    off by ~1e-8 (the values are not float32 numbers).
    """
    sys.path.insert(0, str(NUMPY_APP))
    try:
        from numpy_app.task import TARGET, initial_params
    finally:
        sys.path.remove(str(NUMPY_APP))
    out = tmp_path / "out"
    flwr_run(NUMPY_APP, sim_env, f"output-dir='{out}' num-server-rounds=3 local-lr=0.3")
    t, w0 = _flat(list(TARGET.values())), _flat(initial_params())
    assert np.max(np.abs(w0.astype(np.float32) - w0)) > 1e-9  # float32 would show
    d = w0 - t
    for name in ("fl-r2sp", "bsp", "asp", "fedasync", "fedbuff"):
        npz = np.load(out / f"{name}.npz")
        arrays = [npz[k] for k in npz.files]
        assert [a.dtype for a in arrays] == [np.float64, np.float64], name
        assert [a.shape for a in arrays] == [(3, 4), (4,)], name
        w = _flat(arrays)
        a = 0.7**3 if name == "bsp" else float(np.dot(w - t, d) / np.dot(d, d))
        assert 0.0 < a < 1.0, (name, a)  # it moved toward the optimum
        np.testing.assert_allclose(w, t + a * d, rtol=0, atol=1e-12, err_msg=name)
        info = json.loads((out / f"{name}.json").read_text())
        assert info["keys"] == ["0", "1"]  # the layout of initial_arrays
        (fed,) = info["federated"].values()  # @app.evaluate() on the final model
        assert fed["num-examples"] == 50 + 60 + 70 + 80


def test_numpy_app_with_timed_is_numbered_by_partition_and_reproducible(
    sim_env: dict[str, str], tmp_path: Path
) -> None:
    """One changed line in the ClientApp makes a virtual-time run reproducible."""
    app = tmp_path / "numpy_app"
    shutil.copytree(NUMPY_APP, app, ignore=shutil.ignore_patterns("outputs", "__pycache__"))
    client = app / "numpy_app" / "client_app.py"
    text = client.read_text()
    assert text.count("@app.train()") == 1
    text = text.replace("@app.train()", "@timed(app)")
    text = text.replace(
        "app = ClientApp()", "from fl_r2sp.fl.flower.timed import timed\n\napp = ClientApp()"
    )
    client.write_text(text)
    weights, logs = [], []
    for k in range(2):
        out = tmp_path / f"out{k}"
        logs.append(flwr_run(app, sim_env, f"output-dir='{out}' strategies='fl-r2sp,fedasync'"))
        weights.append(
            {n: _flat(list(np.load(out / f"{n}.npz").values())) for n in ("fl-r2sp", "fedasync")}
        )
    for log in logs:
        assert "No query function registered" not in log  # every node answered the query
        assert "numbered partition" not in log  # none fell back to node-id order
    for name, w in weights[0].items():
        assert np.array_equal(w, weights[1][name]), name

"""The strategies with a stock ClientApp (:mod:`tests.fl.flower.stock_grid`), in process.

Discovery without a query handler (the fallback numbering) and its fast failures, the
user's train_config in every message (a clash refused), replies that carry only arrays
and num-examples (and malformed ones rejected and counted), float64 models kept float64,
federated evaluation aggregated by num-examples, and the virtual-time rule for replies
without compute-s.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord

from fl_r2sp.fl.clients.runtime import ClientRuntime
from fl_r2sp.fl.clients.timing import JobTiming
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.discovery import discover
from fl_r2sp.fl.flower.federated_eval import aggregate_metrics
from fl_r2sp.fl.flower.grid_transport import GridTransport, find_partitions, query_message
from fl_r2sp.fl.flower.replies import read_reply
from fl_r2sp.fl.flower.retry import RetryPolicy
from fl_r2sp.fl.flower.strategy import FLR2SP, STRATEGIES
from fl_r2sp.fl.policies.aggregation import mean, mix, weighted_mean
from fl_r2sp.fl.protocol import Job
from fl_r2sp.fl.server.admission import Admission, AdmissionParams
from fl_r2sp.models.weights import flatten, unflatten
from tests.fl.flower.stock_grid import StockGrid, examples, stand_in_messages

__all__ = ["stand_in_messages"]  # the fixture, used by name below

FAST = RetryPolicy(attempts=2, first_wait=0.001, total=0.5)
pytestmark = pytest.mark.usefixtures("stand_in_messages")


class FakeClock:
    """Injected clock: each sleep advances it (the wait's length without waiting)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


# -- discovery ------------------------------------------------------------------------
def test_stock_nodes_are_numbered_in_ascending_node_id_order() -> None:
    grid = StockGrid([40, 10, 30, 20])
    pmap = find_partitions(grid, timeout=5.0, expected=4, wait_for_all=True, retry=FAST)
    assert pmap.node_of == {0: 10, 1: 20, 2: 30, 3: 40}
    assert pmap.stock == {10, 20, 30, 40}


def test_answering_nodes_keep_their_ids_and_stock_nodes_fill_the_rest() -> None:
    grid = StockGrid([10, 20, 30, 40])
    grid.answers[30] = {"partition-id": 0, "num-partitions": 4}  # a timed() client
    pmap = find_partitions(grid, timeout=5.0, expected=4, wait_for_all=True, retry=FAST)
    assert pmap.node_of == {0: 30, 1: 10, 2: 20, 3: 40}


def test_a_stock_node_replacing_a_lost_one_takes_its_partition() -> None:
    grid = StockGrid([10, 20])
    pmap = find_partitions(grid, timeout=5.0, expected=2, wait_for_all=True, retry=FAST)
    grid.online.discard(10)
    grid.online.add(50)
    pmap.refresh()
    assert pmap.refresh() == [] and pmap.node_of == {0: 50, 1: 20}


def _discover(grid: StockGrid, expected: int) -> FakeClock:
    clock = FakeClock()
    discover(
        grid, query_message, expected, timeout=120.0, wait_for_all=True, retry=FAST,
        clock=clock, sleep=clock.sleep, grace=15.0,
    )  # fmt: skip
    return clock


def test_a_query_answered_with_another_error_fails_at_once_naming_it() -> None:
    grid = StockGrid([10, 20], query_error="<class 'KeyError'>:<'partition-id'>")
    with pytest.raises(RuntimeError, match=r"node 10 answered the partition query with an error"):
        _discover(grid, 2)


def test_more_stock_nodes_than_partitions_is_a_num_partitions_mismatch() -> None:
    with pytest.raises(ValueError, match=r"5 nodes are online but num-partitions=4"):
        _discover(StockGrid([1, 2, 3, 4, 5]), 4)


def test_no_node_connected_is_named_as_such() -> None:
    with pytest.raises(RuntimeError, match="no node connected"):
        find_partitions(StockGrid([]), timeout=0.05, expected=4, wait_for_all=True, retry=FAST)


def test_the_start_wait_ends_once_every_node_answered() -> None:
    clock = _discover(StockGrid([10, 20, 30, 40]), 4)
    assert clock.now < 1.0  # no wait for node-wait (120 s) or node-grace (15 s)


# -- messages: config, replies, dtypes --------------------------------------------------
F64 = {"w": np.arange(6.0).reshape(2, 3) / 3.0, "steps": np.array([7], np.int64)}


def _record(arrays: dict[str, np.ndarray]) -> ArrayRecord:
    return ArrayRecord({k: Array(v) for k, v in arrays.items()})


def test_train_config_reaches_every_message_beside_ours() -> None:
    grid = StockGrid([10, 20])
    pmap = find_partitions(grid, timeout=5.0, expected=2, wait_for_all=True, retry=FAST)
    template = list(F64.values())
    transport = GridTransport(
        grid, template, pmap.node_of, retry=FAST, names=list(F64),
        train_config=ConfigRecord({"lr": 0.25, "epochs": 2}),
    )  # fmt: skip
    transport.submit(Job(cid=1, index=3, tag=5, weights=flatten(template)))
    (kind, node, config) = grid.received[-1]
    assert (kind, node) == ("train", 20)
    assert config["lr"] == 0.25 and config["epochs"] == 2
    assert (config["job"], config["tag"], config["cid"]) == (3, 5, 1)


@pytest.mark.parametrize("key", ["job", "cid", "compute-s"])
def test_a_train_config_key_clashing_with_ours_is_refused_at_start(key: str) -> None:
    grid = StockGrid([10, 20])
    cfg = RunConfig(num_partitions=2, num_groups=1, plots=False)
    with pytest.raises(ValueError, match=f"train_config key '{key}' clashes"):
        FLR2SP(cfg).start(grid, _record(F64), train_config=ConfigRecord({key: 1}))
    assert grid.received == []  # nothing was sent


def test_an_evaluate_config_clash_is_refused_too() -> None:
    grid = StockGrid([10])
    with pytest.raises(ValueError, match="evaluate_config key 'server-round' clashes"):
        FLR2SP(RunConfig(num_partitions=1, num_groups=1)).start(
            grid, _record(F64), evaluate_config=ConfigRecord({"server-round": 1})
        )


def _content(drop: str | None = None) -> dict[str, object]:
    metrics = {"num-examples": 12, "train_loss": 0.5}
    if drop == "num-examples":
        del metrics["num-examples"]
    content: dict[str, object] = {"arrays": _record(F64), "metrics": MetricRecord(metrics)}
    if drop in content:
        del content[drop]
    return content


def test_a_reply_needs_only_arrays_and_num_examples() -> None:
    got = read_reply(_content(), list(F64.values()))  # type: ignore[arg-type]
    assert not isinstance(got, str)
    assert got.num_examples == 12 and got.loss == 0.5  # train_loss: the templates' key
    assert got.compute_s is None and got.delay_s is None  # the clock's rule applies


@pytest.mark.parametrize(
    ("drop", "named"),
    [("arrays", "no ArrayRecord 'arrays'"), ("metrics", "no MetricRecord 'metrics'"),
     ("num-examples", "metrics have no 'num-examples'")],
)  # fmt: skip
def test_a_malformed_reply_is_rejected_naming_the_missing_key(drop: str, named: str) -> None:
    got = read_reply(_content(drop), list(F64.values()))  # type: ignore[arg-type]
    assert isinstance(got, str) and got.startswith("malformed reply") and named in got


def test_a_malformed_reply_is_counted_as_rejected() -> None:
    grid = StockGrid([10])
    grid.drop.add("num-examples")
    template = list(F64.values())
    transport = GridTransport(grid, template, {0: 10}, retry=FAST, names=list(F64),
                              train_config=ConfigRecord({"lr": 0.1}))  # fmt: skip
    transport.submit(Job(cid=0, index=0, tag=0, weights=flatten(template)))
    (got,) = transport.poll(timeout=1.0)
    assert got.error is not None and "'num-examples'" in got.error
    admission = Admission(AdmissionParams.from_config(RunConfig()), 7, np.float64)
    verdict = admission.check(got)
    assert verdict is not None and verdict.rejected and verdict.reason == "malformed"


def test_float64_stays_float64_through_flattening_and_aggregation() -> None:
    arrays = list(F64.values())
    flat = flatten(arrays)
    assert flat.dtype == np.float64
    back = unflatten(flat, arrays)
    assert [a.dtype for a in back] == [np.float64, np.int64]
    assert np.array_equal(back[0], arrays[0])  # bit for bit
    other = flat + 1.0 / 7.0
    assert mean([flat, other]).dtype == np.float64
    np.testing.assert_allclose(mean([flat, other]), (flat + other) / 2, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        weighted_mean([flat, other], [1.0, 3.0]), (flat + 3 * other) / 4, rtol=0, atol=1e-15
    )
    assert mix(flat, other, 0.25).dtype == np.float64
    assert flatten([np.zeros(2, np.float32), np.zeros(1, np.int64)]).dtype == np.float32


def test_job_timing_is_what_the_projects_client_reports() -> None:
    cfg = RunConfig(num_partitions=4, device="lognormal(sigma=0.5,jitter=0.2)")
    timing, runtime = JobTiming(cfg), ClientRuntime(cfg)
    for cid, job in itertools.product(range(4), range(3)):
        assert timing.compute(cid, job) == runtime.job_compute_seconds(cid, job)
        assert timing.lower_bound(cid) == runtime.compute_seconds(cid)
        assert timing.delay(cid, job) == runtime.delay.sample_for(cfg.seed, cid, job)


# -- a whole run: every strategy with the stock client -------------------------------
def _run(
    name: str, tmp_path: Path, evaluate_fn: Callable[..., MetricRecord] | None = None, **cfg: object
) -> tuple[StockGrid, object, RunConfig]:
    grid = StockGrid([40, 10, 30, 20])
    config = RunConfig(
        num_partitions=4, num_groups=2 if name == "fl-r2sp" else 1, max_updates=4,
        **{"eval_every": 1, "federated_eval_every": 2, "run_dir": str(tmp_path),
           "plots": False, **cfg},
    )  # fmt: skip
    result = STRATEGIES[name](config).start(
        grid,
        _record(F64),
        num_rounds=4,
        timeout=60,
        train_config=ConfigRecord({"lr": 0.5}),
        evaluate_fn=evaluate_fn,
    )
    return grid, result, config


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_runs_a_stock_client(name: str, tmp_path: Path) -> None:
    grid, result, _ = _run(name, tmp_path)
    trains = [c for kind, _, c in grid.received if kind == "train"]
    assert trains and all(c["lr"] == 0.5 for c in trains)
    arrays = result.arrays  # type: ignore[attr-defined]
    assert list(arrays.keys()) == ["w", "steps"]  # names and order of initial_arrays
    w, steps = arrays.to_numpy_ndarrays()
    assert w.dtype == np.float64 and steps.dtype == np.int64 and steps.tolist() == [7]
    # Every client steps toward 1/3 from a model on the line [w0, 1/3]: so is the global one.
    w0, third = F64["w"], np.full((2, 3), 1.0 / 3.0)
    a = float(np.sum((w - third) * (w0 - third)) / np.sum((w0 - third) ** 2))
    assert 0.0 < a < 1.0
    np.testing.assert_allclose(w, third + a * (w0 - third), rtol=0, atol=1e-14)
    central = result.evaluate_metrics_serverapp  # type: ignore[attr-defined]
    assert sorted(central) == [0, 1, 2, 3, 4]  # every global update, no central scores
    assert "accuracy" not in central[4]  # no evaluate_fn: not the project's test split


def test_evaluate_fn_is_called_with_the_update_number_of_the_result(tmp_path: Path) -> None:
    seen: list[int] = []

    def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        seen.append(server_round)
        return MetricRecord({"accuracy": server_round / 10, "loss": 1.0})

    # Every 3rd of 4 updates: the initial model, update 3 and the final update 4.
    _, result, _ = _run("fl-r2sp", tmp_path, evaluate_fn=evaluate_fn, eval_every=3)
    central = result.evaluate_metrics_serverapp  # type: ignore[attr-defined]
    assert seen == sorted(central) == [0, 3, 4]
    assert [central[v]["accuracy"] for v in seen] == [0.0, 0.3, 0.4]  # each score under its key


def test_federated_evaluation_is_weighted_by_num_examples(tmp_path: Path) -> None:
    grid, result, _ = _run("fl-r2sp", tmp_path)
    evaluations = [(node, c) for kind, node, c in grid.received if kind == "evaluate"]
    assert sorted({c["server-round"] for _, c in evaluations}) == [2, 4]  # F=2, and final
    nodes = [10, 20, 30, 40]
    n = np.array([examples(x) for x in nodes], float)
    expected = float(np.sum(n * np.array(nodes) / 100.0) / n.sum())
    fed = result.evaluate_metrics_clientapp  # type: ignore[attr-defined]
    assert sorted(fed) == [2, 4]
    assert fed[4]["eval_acc"] == pytest.approx(expected, abs=1e-15)
    assert fed[4]["num-examples"] == int(n.sum())
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    with open(folder / "federated_eval.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["version"]) for r in rows] == [2, 4]
    assert float(rows[1]["eval_acc"]) == pytest.approx(expected, abs=1e-15)


def test_virtual_time_without_compute_s_uses_the_servers_model(tmp_path: Path) -> None:
    _, _, cfg = _run("fl-r2sp", tmp_path, delay="constant(value=0.25)")
    timing = JobTiming(cfg)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    with open(folder / "jobs.csv", newline="") as fh:
        jobs = [r for r in csv.DictReader(fh) if r["train_end"]]
    assert jobs
    for r in jobs:
        cid, job = int(r["cid"]), int(r["job"])
        compute = float(r["train_end"]) - float(r["pull_end"])
        assert compute == pytest.approx(timing.compute(cid, job), rel=1e-9) and compute > 0
        assert float(r["delay"]) == 0.25


def test_aggregate_metrics_skips_non_numbers_and_sums_examples() -> None:
    got = aggregate_metrics(
        [{"num-examples": 1, "acc": 1.0, "v": [1.0]}, {"num-examples": 3, "acc": 0.0, "v": [2.0]}]
    )
    assert dict(got) == {"num-examples": 4, "acc": 0.25}


def test_config_json_of_a_stock_run_names_no_project_data(tmp_path: Path) -> None:
    _run("bsp", tmp_path)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    assert summary["status"] == "completed" and summary["num_outliers"] == 0


# -- the timed() helper ------------------------------------------------------------------
def _timed_app() -> object:
    from flwr.clientapp import ClientApp

    from fl_r2sp.fl.flower.timed import timed

    app = ClientApp()

    @timed(app)
    def train(msg: object, context: object) -> object:
        metrics = MetricRecord({"num-examples": 3})
        return SimpleNamespace(content={"metrics": metrics}, has_error=lambda: False)

    return app


def _call(app: object, kind: str, config: dict[str, object], node_config: dict[str, int]) -> object:
    msg = SimpleNamespace(content={"config": ConfigRecord(config)})  # type: ignore[arg-type]
    context = SimpleNamespace(node_config=node_config)
    return app._registered_funcs[f"{kind}.default"](msg, context)  # type: ignore[attr-defined]


def test_timed_reports_the_modelled_timing_in_virtual_time() -> None:
    config = {"compute-s": 1.5, "delay-s": 0.25, "clock": "virtual", "job": 0}
    reply = _call(_timed_app(), "train", config, {"partition-id": 2})
    metrics = reply.content["metrics"]  # type: ignore[attr-defined]
    assert (metrics["compute-s"], metrics["delay-s"], metrics["num-examples"]) == (1.5, 0.25, 3)


def test_timed_passes_messages_of_other_strategies_through() -> None:
    reply = _call(_timed_app(), "train", {"server-round": 1}, {"partition-id": 2})
    assert "compute-s" not in reply.content["metrics"]  # type: ignore[attr-defined]


def test_timed_answers_the_query_only_with_a_partition_id() -> None:
    with pytest.raises(ValueError, match="node-config has no partition-id"):
        _call(_timed_app(), "query", {}, {})


def test_a_stock_run_loads_nothing_of_the_projects_model_or_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fl_r2sp.fl.clients.runtime as runtime

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the project's data or model was loaded for a user's model")

    monkeypatch.setattr(runtime, "data_for", refuse)
    monkeypatch.setattr(runtime, "runtime_for", refuse)
    monkeypatch.setattr("fl_r2sp.fl.server.evaluation.CentralEvaluator", refuse)
    _, result, _ = _run("fl-r2sp", tmp_path, plots=True)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert (folder / "COMPLETE").is_file() and not (folder / "partition.csv").exists()
    assert sorted(result.evaluate_metrics_clientapp) == [2, 4]  # type: ignore[attr-defined]

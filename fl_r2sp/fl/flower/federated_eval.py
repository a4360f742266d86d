"""Federated evaluation: the global model scored by the clients' own ``@app.evaluate()``.

As Flower's strategies do (``configure_evaluate`` / ``aggregate_evaluate``): an evaluate
message with the model's arrays and the user's ``evaluate_config`` (plus ``server-round``
= the global-update number) goes to every node of the run; the replies' metrics are
averaged, weighted by their ``num-examples``, into one ``MetricRecord`` (Flower's
``aggregate_metricrecords`` rule). A node's error reply, or a reply without a
``MetricRecord`` ``metrics`` holding ``num-examples``, is left out and counted
(``eval-failed``); the wait for the replies is bounded by ``timeout``.

Cadence (run-config ``federated-eval-every`` = F): at the central-evaluation points whose
global-update number is a multiple of F (F > 0), and always once on the final model
(F = -1: never).
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import Grid

from fl_r2sp.fl.flower.records import MetricValue, named_record, number
from fl_r2sp.fl.flower.retry import RetryPolicy, call_with_retry
from fl_r2sp.models.weights import unflatten

__all__ = [
    "FederatedEvaluation",
    "aggregate_metrics",
    "check_evaluate_config",
    "record_federated_eval",
]

log = logging.getLogger("fl_r2sp")

#: Config keys the strategy sets in every evaluate message.
EVAL_KEYS = ("server-round",)
#: Seconds between two pulls while waiting for evaluate replies.
_PULL_EVERY = 0.01


def check_evaluate_config(config: ConfigRecord | None) -> None:
    """Refuse an ``evaluate_config`` that uses a key of :data:`EVAL_KEYS`, naming it."""
    clash = sorted(set(config or {}) & set(EVAL_KEYS))
    if clash:
        raise ValueError(
            f"evaluate_config key {clash[0]!r} clashes with a key the strategy sets in every "
            "evaluate message (the global-update number): rename it"
        )


def aggregate_metrics(replies: Sequence[Mapping[str, object]]) -> MetricRecord:
    """Every numeric metric averaged with weights ``num-examples`` (Flower's rule).

    The sum of ``num-examples`` is kept under that key; metrics that are not numbers
    in every reply (lists) are left out.
    """
    counts = np.array([float(number(r, "num-examples")) for r in replies])
    out: dict[str, MetricValue] = {"num-examples": int(counts.sum())}
    keys = [k for k in replies[0] if k != "num-examples"]
    for key in keys:
        try:
            values = [float(number(r, key)) for r in replies]
        except (KeyError, TypeError):
            continue
        out[key] = float(np.average(values, weights=counts)) if counts.sum() > 0 else np.nan
    return MetricRecord(out)


class FederatedEvaluation:
    """Sends evaluate messages to the run's nodes and aggregates their metrics.

    Parameters
    ----------
    grid : Grid
        The ServerApp's grid.
    node_of : mapping of int to int
        {partition id: node id}, read at each call (re-attached nodes included).
    template : sequence of np.ndarray
        The model's arrays (the layout of ``initial_arrays``).
    config : ConfigRecord or None
        The user's ``evaluate_config``.
    timeout : float
        Seconds to wait for the replies of one evaluation.
    retry : RetryPolicy or None (default: None = RetryPolicy())
        Retries of the SuperLink calls.
    names : sequence of str or None (default: None = Flower's list keys)
        The model's array names (kept in every message).
    """

    def __init__(
        self,
        grid: Grid,
        node_of: Mapping[int, int],
        template: Sequence[np.ndarray],
        config: ConfigRecord | None,
        timeout: float,
        retry: RetryPolicy | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.names = list(names) if names is not None else None
        check_evaluate_config(config)
        self.grid, self.node_of, self.template = grid, node_of, list(template)
        self.config, self.timeout = config, timeout
        self.retry = retry if retry is not None else RetryPolicy()
        #: {global-update number: aggregated metrics} of the evaluations so far.
        self.results: dict[int, MetricRecord] = {}
        #: Replies left out (errors, missing num-examples, no reply within timeout).
        self.failed = 0

    def __call__(self, version: int, weights: np.ndarray) -> MetricRecord | None:
        """Evaluate ``weights`` on every node; the aggregate (None: no valid reply)."""
        if version in self.results:
            return self.results[version]
        arrays = named_record(unflatten(weights, self.template), self.names)
        config = ConfigRecord(dict(self.config or {}))
        config["server-round"] = version
        nodes = sorted(set(self.node_of.values()))
        msgs = [
            Message(RecordDict({"arrays": arrays, "config": config}), n, MessageType.EVALUATE)
            for n in nodes
        ]
        ids = call_with_retry(lambda: list(self.grid.push_messages(msgs)), "evaluate", self.retry)
        metrics = self._collect([i for i in ids if i])
        if not metrics:
            log.warning("federated evaluation of update %d: no valid reply", version)
            return None
        self.results[version] = aggregate_metrics(metrics)
        log.info(
            "federated evaluation of update %d: %d nodes, %s",
            version,
            len(metrics),
            dict(self.results[version]),
        )
        return self.results[version]

    def _collect(self, ids: list[str]) -> list[Mapping[str, object]]:
        """The valid metrics of the replies to ``ids`` that came within ``timeout``."""
        waiting, good = set(ids), list[Mapping[str, object]]()
        deadline = time.monotonic() + self.timeout
        while waiting and time.monotonic() < deadline:
            pulled = call_with_retry(
                lambda: list(self.grid.pull_messages(sorted(waiting))), "evaluate", self.retry
            )
            for reply in pulled:
                waiting.discard(reply.metadata.reply_to_message_id)
                problem = _problem(reply)
                metrics = None if problem else reply.content["metrics"]
                if metrics is not None and _is_metrics(metrics):
                    good.append(metrics)
                else:
                    self.failed += 1
                    log.warning("evaluate reply of node %d left out: %s", _src(reply), problem)
            if waiting and not pulled:
                time.sleep(_PULL_EVERY)
        if waiting:
            self.failed += len(waiting)
            log.warning(
                "federated evaluation: %d nodes did not reply within %g s",
                len(waiting),
                self.timeout,
            )
        return good


def _src(reply: Message) -> int:
    return int(reply.metadata.src_node_id)


def _problem(reply: Message) -> str | None:
    """Why an evaluate reply cannot be aggregated, or None."""
    if reply.has_error():
        return f"error: {reply.error.reason}"
    content = reply.content
    if "metrics" not in content or not _is_metrics(content["metrics"]):
        return "no MetricRecord 'metrics' (an evaluate reply needs metrics 'num-examples')"
    if "num-examples" not in content["metrics"]:
        return f"metrics have no 'num-examples' (keys: {sorted(content['metrics'])})"
    return None


def record_federated_eval(
    run_dir: Path | None, results: Mapping[int, MetricRecord], failed: int
) -> Path | None:
    """Write ``federated_eval.csv`` (one row per evaluation: ``version``, the metrics,
    and a last column of replies left out in the whole run) into the run's folder."""
    if run_dir is None or not results:
        return None
    keys = sorted({k for rec in results.values() for k in rec})
    path = Path(run_dir) / "federated_eval.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["version", *keys, "replies_left_out"])
        for version in sorted(results):
            rec = results[version]
            writer.writerow([version, *(rec.get(k, "") for k in keys), failed])
    return path


def _is_metrics(record: object) -> bool:
    """A metrics record: Flower's ``MetricRecord`` (or any mapping that is no ArrayRecord)."""
    return isinstance(record, Mapping) and not isinstance(record, ArrayRecord)

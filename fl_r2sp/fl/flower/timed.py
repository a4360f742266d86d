"""One decorator that makes a stock Flower ClientApp a timed client of the project's strategies.

Replace ``@app.train()`` by ``@timed(app)``; nothing else changes::

    from flwr.clientapp import ClientApp
    from fl_r2sp.fl.flower.timed import timed

    app = ClientApp()

    @timed(app)                        # was: @app.train()
    def train(msg: Message, context: Context) -> Message:
        ...                            # the user's code, as Flower's templates write it

It adds what the stock client lacks:

* **the partition answer**: a query handler on ``app`` that reports the node's
  ``partition-id`` and ``num-partitions`` from its node config (set by the simulation,
  or ``--node-config "partition-id=i num-partitions=N"`` on a SuperNode), so the
  strategy numbers the nodes as the data is partitioned and a run is reproducible
  (without it, nodes are numbered by node id, which is random per run);
* **virtual clock**: the reply's metrics get ``compute-s`` and ``delay-s``, the modelled
  compute time and injected delay the strategy sent in the train config (the values the
  server would use anyway, :mod:`.replies`); nothing is slept;
* **wall clock**: the injected delay ``delay-s`` is slept after training (as the paper's
  clients wait before returning their update) and the reply reports the measured training
  seconds as ``compute-s`` and the delay slept as ``delay-s``.

A train message without the strategy's keys (Flower's own ``FedAvg``) passes through
untouched, so the decorated app serves Flower's strategies too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fl_r2sp.fl.flower.records import number

__all__ = ["partition_answer", "timed"]

TrainFn = Callable[[Message, Context], Message]


def partition_answer(msg: Message, context: Context) -> Message:
    """Answer the strategies' partition query from the node config.

    Raises
    ------
    ValueError
        The node config has no ``partition-id`` (the error reply names it, and the
        strategy's start fails at once with that text).
    """
    if "partition-id" not in context.node_config:
        raise ValueError(
            "node-config has no partition-id: start the SuperNode with "
            '--node-config "partition-id=<i> num-partitions=<N>"'
        )
    cfg = ConfigRecord(
        {
            "partition-id": int(context.node_config["partition-id"]),
            "num-partitions": int(context.node_config.get("num-partitions", 0)),
        }
    )
    return Message(RecordDict({"config": cfg}), reply_to=msg)


def timed(app: ClientApp) -> Callable[[TrainFn], TrainFn]:
    """Register the decorated function as ``app``'s train function, timed (module docstring).

    Also registers :func:`partition_answer` as ``app``'s query handler.

    Raises
    ------
    ValueError
        ``app`` already has a query or train handler (Flower's own check).
    """
    app.query()(partition_answer)

    def decorator(fn: TrainFn) -> TrainFn:
        def train(msg: Message, context: Context) -> Message:
            conf = msg.content["config"] if "config" in msg.content else ConfigRecord()
            if "compute-s" not in conf:  # not one of the project's strategies
                return fn(msg, context)
            started = time.perf_counter()
            reply = fn(msg, context)
            measured = time.perf_counter() - started
            metrics = None if reply.has_error() else reply.content.get("metrics")
            if not isinstance(metrics, MetricRecord):
                return reply  # the strategy rejects it and names what is missing
            delay = float(number(conf, "delay-s"))
            if conf.get("clock") == "wall":
                time.sleep(delay)
                metrics["compute-s"] = measured
            else:
                metrics["compute-s"] = float(number(conf, "compute-s"))
            metrics["delay-s"] = delay
            return reply

        train.__name__, train.__doc__ = fn.__name__, fn.__doc__
        app.train()(train)
        return fn

    return decorator

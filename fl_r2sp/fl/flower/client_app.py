"""The project's Flower ClientApp.

* ``query``: answers the node's ``partition-id`` (node ids are random; the
  server addresses clients by partition id).
* ``train``: local SGD for ``local-iterations`` steps on the node's partition,
  from the received arrays; replies with the new arrays and metrics
  ``num-examples``, ``train-loss``, ``compute-s`` (modelled compute time used
  by the virtual clock), ``delay-s`` (injected delay; slept for real in
  wall-clock mode), ``partition-id``, ``job`` and ``tag``. It also serves
  Flower's stock ``FedAvg`` (job index = ``server-round``).
* ``evaluate``: loss/accuracy of the received arrays on the local partition.

Any exception becomes a Flower error reply (the server frees the node); the
run goes on.

``model`` and ``dataset`` may name the user's own code by import path
(``"my_pkg.nets:build"``, docs/user-code.md): each ClientApp process imports it when it
builds its runtime, so the package must be importable on every node (installed, or in the
app's folder). The ServerApp checks the contract before any node is asked to train.
"""

from __future__ import annotations

from functools import lru_cache

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.records import arrays_of, number
from fl_r2sp.fl.protocol import Job

# torch-dependent modules are imported inside the train/evaluate handlers:
# deployments start a fresh ClientApp process per message, and the partition
# query should not pay for importing torch.

app = ClientApp()


@lru_cache(maxsize=8)
def _config(items: tuple[tuple[str, object], ...]) -> RunConfig:
    return RunConfig.from_run_config(dict(items))


def config_of(context: Context) -> RunConfig:
    """The validated run config of this run (memoised per process)."""
    return _config(tuple(sorted(context.run_config.items())))


def partition_of(context: Context) -> int:
    """This node's partition id (from ``--node-config`` or the simulation)."""
    if "partition-id" not in context.node_config:
        raise ValueError(
            "node-config has no partition-id: start the SuperNode with "
            '--node-config "partition-id=<i> num-partitions=<N>"'
        )
    return int(context.node_config["partition-id"])


@app.query()
def query(msg: Message, context: Context) -> Message:
    """Report the partition id (and how many partitions the node was told of)."""
    cfg = ConfigRecord(
        {
            "partition-id": partition_of(context),
            "num-partitions": int(context.node_config.get("num-partitions", 0)),
        }
    )
    return Message(RecordDict({"config": cfg}), reply_to=msg)


@app.train()
def train(msg: Message, context: Context) -> Message:
    """Run one local-training job and reply with the new arrays and timings."""
    from fl_r2sp.fl.clients.runtime import runtime_for
    from fl_r2sp.models.weights import flatten, unflatten

    cfg = config_of(context)
    pid = partition_of(context)
    conf = msg.content["config"] if "config" in msg.content else ConfigRecord()
    # Our strategies send a per-client job index; Flower's FedAvg sends
    # server-round (1, 2, ...): round k is job k-1, so both seed SGD alike.
    index = int(number(conf, "job")) if "job" in conf else int(number(conf, "server-round", 1)) - 1
    tag = int(number(conf, "tag", index))
    arrays = arrays_of(msg.content)
    job = Job(cid=pid, index=index, tag=tag, weights=flatten(arrays))
    reply = runtime_for(cfg).run(job, sleep_delay=cfg.clock == "wall")
    assert reply.weights is not None
    metrics = MetricRecord(
        {
            "num-examples": reply.num_examples,
            "train-loss": float(reply.loss),
            "compute-s": float(reply.compute_s),
            "delay-s": float(reply.delay_s),
            "partition-id": pid,
            "job": index,
            "tag": tag,
        }
    )
    fits = reply.weights.size == sum(a.size for a in arrays)
    # A vector that does not fit the model (a fuzzing client, attack = shape(k)) goes out as
    # one flat array: the server must see and reject it, not this process crash on it.
    out = ArrayRecord(unflatten(reply.weights, arrays) if fits else [reply.weights])
    return Message(RecordDict({"arrays": out, "metrics": metrics}), reply_to=msg)


@app.evaluate()
def evaluate_local(msg: Message, context: Context) -> Message:
    """Evaluate the received arrays on this node's partition."""
    from fl_r2sp.fl.clients.runtime import data_for, runtime_for
    from fl_r2sp.models.weights import arrays_to_state, flatten, unflatten
    from fl_r2sp.training import evaluate

    cfg = config_of(context)
    runtime = runtime_for(cfg)
    arrays = arrays_of(msg.content)
    arrays_to_state(runtime.model, unflatten(flatten(arrays), runtime.template))
    data = data_for(cfg).client(partition_of(context))
    res = evaluate(runtime.model, data.x, data.y)
    metrics = MetricRecord(
        {
            "num-examples": res.num_examples,
            "eval-loss": float(res.loss),
            "eval-acc": float(res.accuracy),
        }
    )
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)

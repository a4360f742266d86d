"""numpy-app: a stock Flower ClientApp (NumPy; imports nothing from fl_r2sp)."""

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from numpy_app.task import load_data, loss
from numpy_app.task import train as train_fn

app = ClientApp()


@app.train()
def train(msg: Message, context: Context) -> Message:
    """One local step on the partition."""
    params = msg.content["arrays"].to_numpy_ndarrays()
    n = load_data(context.node_config["partition-id"], context.node_config["num-partitions"])
    new, train_loss = train_fn(params, context.run_config["local-lr"])
    metrics = MetricRecord({"train_loss": train_loss, "num-examples": n})
    content = RecordDict({"arrays": ArrayRecord(new), "metrics": metrics})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    """Loss of the received model."""
    params = msg.content["arrays"].to_numpy_ndarrays()
    n = load_data(context.node_config["partition-id"], context.node_config["num-partitions"])
    metrics = MetricRecord({"eval_loss": loss(params), "num-examples": n})
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)

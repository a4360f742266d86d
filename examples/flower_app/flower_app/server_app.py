"""flower-app: a Flower ServerApp; run-config ``strategy`` picks FedAvg or an fl_r2sp strategy."""

import json
from pathlib import Path

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

# The one import a Flower app adds to switch to fl_r2sp's strategies.
from fl_r2sp import ASP, BSP, FLR2SP, FedAsync, FedBuff, RunConfig
from flower_app.task import Net, load_centralized_dataset, test

OURS = {"fl-r2sp": FLR2SP, "bsp": BSP, "asp": ASP, "fedasync": FedAsync, "fedbuff": FedBuff}

# Create ServerApp
app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    """Main entry point for the ServerApp."""
    rc = context.run_config
    num_rounds: int = rc["num-server-rounds"]
    lr: float = rc["lr"]
    out = Path(str(rc["output-dir"]))

    # Load global model
    global_model = Net()
    arrays = ArrayRecord(global_model.state_dict())

    name = str(rc["strategy"])
    if name == "fedavg":
        strategy = FedAvg(fraction_train=rc["fraction-train"])
    else:
        num_nodes = int(rc["num-partitions"])
        strategy = OURS[name](
            RunConfig(
                num_partitions=num_nodes,
                num_groups=int(rc["num-groups"]),
                fraction=float(rc["fraction"]),
                clock=str(rc["clock"]),
                run_dir=str(out / "runs"),
                eval_every=1,  # evaluate_fn on every global update
                plots=False,
            )
        )

    # Start strategy, run FedAvg (or fl_r2sp's) for `num_rounds`
    result = strategy.start(
        grid=grid,
        initial_arrays=arrays,
        train_config=ConfigRecord({"lr": lr}),
        num_rounds=num_rounds,
        evaluate_fn=global_evaluate,
    )

    # Save final model and the Result's metrics to disk
    out.mkdir(parents=True, exist_ok=True)
    print("\nSaving final model to disk...")
    torch.save(result.arrays.to_torch_state_dict(), out / "final_model.pt")
    metrics = {
        kind: {str(k): dict(v) for k, v in getattr(result, kind).items()}
        for kind in ("evaluate_metrics_clientapp", "evaluate_metrics_serverapp")
    }
    (out / "result.json").write_text(json.dumps({"strategy": name, **metrics}, indent=1))


def global_evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord:
    """Evaluate the global model on the central test set."""
    model = Net()
    model.load_state_dict(arrays.to_torch_state_dict())
    loss, accuracy = test(model, load_centralized_dataset(), "cpu")
    return MetricRecord({"accuracy": accuracy, "loss": loss})

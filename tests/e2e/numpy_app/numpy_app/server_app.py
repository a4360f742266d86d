"""numpy-app: a ServerApp that runs each strategy of run-config ``strategies`` in turn.

No ``evaluate_fn`` and no ``train_config``, as Flower's NumPy template. Each strategy's
final arrays go to ``<output-dir>/<strategy>.npz`` and its Result's federated evaluations
to ``<output-dir>/<strategy>.json``.
"""

import json
from pathlib import Path

import numpy as np
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp

from fl_r2sp import ASP, BSP, FLR2SP, FedAsync, FedBuff, RunConfig
from numpy_app.task import initial_params

OURS = {"fl-r2sp": FLR2SP, "bsp": BSP, "asp": ASP, "fedasync": FedAsync, "fedbuff": FedBuff}

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    out = Path(str(rc["output-dir"]))
    out.mkdir(parents=True, exist_ok=True)
    for name in str(rc["strategies"]).split(","):
        cfg = RunConfig(
            num_partitions=4,
            num_groups=2 if name == "fl-r2sp" else 1,
            fraction=1.0,
            run_dir=str(out / "runs"),
            plots=False,
        )
        result = OURS[name](cfg).start(
            grid=grid,
            initial_arrays=ArrayRecord(initial_params()),
            num_rounds=int(rc["num-server-rounds"]),
        )
        arrays = result.arrays
        np.savez(out / f"{name}.npz", *arrays.to_numpy_ndarrays())
        fed = {str(k): dict(v) for k, v in result.evaluate_metrics_clientapp.items()}
        central = {str(k): dict(v) for k, v in result.evaluate_metrics_serverapp.items()}
        info = {"keys": list(arrays.keys()), "federated": fed, "central": central}
        (out / f"{name}.json").write_text(json.dumps(info))

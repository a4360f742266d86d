"""Everything that touches Flower, in one package.

* :mod:`.strategy`: the Flower ``Strategy`` classes ``FLR2SP``, ``BSP``, ``ASP``,
  ``FedAsync``, ``FedBuff`` (each runs one plain-Python policy of
  ``fl_r2sp.fl.policies`` through the server loops of ``fl_r2sp.fl.server``);
  ``fl_r2sp.fl.policies`` re-exports them lazily as the public import;
* :mod:`.grid_transport`: the Flower ``Grid`` as a server transport;
* :mod:`.server_app` / :mod:`.client_app`: the ServerApp and ClientApp that
  ``flwr run .`` starts (``pyproject.toml``, ``[tool.flwr.app.components]``);
* :mod:`.fedavg_baseline`: Flower's stock ``FedAvg`` as a baseline;
* :mod:`.processes`: start and stop SuperLink / SuperNode processes.
* :mod:`.records`: typed reads of Flower message records (arrays, metrics, numbers).
* :mod:`.replies`: what a train reply must and may carry (a stock ClientApp's is enough);
* :mod:`.federated_eval`: evaluate messages to the clients' ``@app.evaluate()``;
* :mod:`.timed`: the one decorator a stock ClientApp adds for reproducible virtual time.

Dependencies point one way: this package imports ``server``, ``clients``,
``strategies`` and the layers below them; nothing else in ``fl_r2sp`` imports
it (the strategies' lazy re-export aside). The package itself imports
nothing, so the ClientApp's partition query does not pay for torch.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""The federated server: event loops (virtual and wall clock), executors, admission,
checkpoints and the in-process runner (:func:`~fl_r2sp.fl.server.runner.run`).

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

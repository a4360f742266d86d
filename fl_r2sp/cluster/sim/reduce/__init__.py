"""The all-reduce family's simulator: spec, workloads, flow-level rings, event loop, results.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""The all-reduce family's runtime (all reduce, partial, selective): config, flags, controller
thread, workers, rank entry.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""Shared steps of the families without a parameter server (every rank a worker): config helpers,
rank entry, local step, dynamic subgroups.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""DS-Sync's flow-level twin: communication time per iteration in racks.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""What every cluster policy shares: the coordinator contract, decision tracing, the base of the
parameter-server scheme records.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

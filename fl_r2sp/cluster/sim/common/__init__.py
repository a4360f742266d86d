"""What the cluster twins share: typed events and their dispatch.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

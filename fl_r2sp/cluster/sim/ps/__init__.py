"""The parameter-server twin: spec, event loop, result, replay of recorded reports.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

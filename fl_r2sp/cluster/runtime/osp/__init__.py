"""OSP's roles on the parameter-server runtime: layer layout, GIB planner, two-stage shards,
servers, links and workers.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""The DS-Sync family's runtime (DS-Sync, hierarchical all-reduce, gossip): config, flags, rack
network, plans, workers, rank entry.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

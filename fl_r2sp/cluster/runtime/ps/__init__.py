"""The parameter-server runtime: shards, PS ranks, the coordinator thread, Algorithm 1's worker,
rank 0's leader, the PS rank entry and flags.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

"""OSP: the layer choice, LGP and ICS rules, the ICS budget, the coordinator and the record of its
three variants.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

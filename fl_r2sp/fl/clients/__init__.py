"""Client-side training of the federated half: our ClientApp's work (:mod:`.runtime`) and the
model-poisoning attacks (:mod:`.attacks`).

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []

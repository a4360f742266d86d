"""What the launchers and the rank entry need of any scheme family's run configuration."""

from __future__ import annotations

from typing import Any, Protocol


class ClusterRunConfig(Protocol):
    """A run configuration of any family (:class:`~fl_r2sp.cluster.config.ClusterConfig`,
    ``ReduceRunConfig``, ``DSSyncRunConfig``)."""

    @property
    def world_size(self) -> int:
        """Ranks the run starts."""
        ...

    @property
    def run_timeout_s(self) -> float:
        """Wall limit of the run, s."""
        ...

    @property
    def scheme_name(self) -> str:
        """The scheme it runs: its key in :data:`fl_r2sp.cluster.schemes.CLUSTER_SCHEMES`."""
        ...

    def validate(self, check_model: bool = True) -> Any:
        """Raise ValueError on a bad field; return the config."""
        ...

    def caveats(self) -> list[str]:
        """Warnings about settings that turn the scheme into another but that a user may
        mean (the refused ones raise in :meth:`validate`)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (the run directory's ``config.json``)."""
        ...

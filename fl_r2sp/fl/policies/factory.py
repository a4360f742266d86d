"""Build the policy a run configuration asks for (through the scheme registry)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fl_r2sp.fl.policies.base import Policy
from fl_r2sp.fl.policies.params import SchemeParams
from fl_r2sp.fl.policies.registry import SCHEMES, scheme

#: Names of the schemes that have a policy (every one but Flower's stock FedAvg).
STRATEGIES: tuple[str, ...] = tuple(n for n, s in SCHEMES.items() if s.build is not None)


class SchemeConfig(Protocol):
    """What the factory reads from a configuration (``RunConfig`` provides it)."""

    @property
    def strategy(self) -> str:
        """Registered scheme name."""
        ...

    def scheme_params(self) -> SchemeParams:
        """The scheme knobs as validated parameter records."""
        ...


def make_policy(
    cfg: SchemeConfig, clients: Sequence[int], known_outliers: frozenset[int] = frozenset()
) -> Policy:
    """Return the policy of ``cfg.strategy`` for ``clients`` (partition ids).

    Parameters
    ----------
    cfg : RunConfig
        Run configuration (anything with ``strategy`` and ``scheme_params()``).
    clients : sequence of int
        Partition ids taking part in the run.
    known_outliers : frozenset of int, default empty
        Ground-truth outlier ids (blacklist precision/recall).

    Returns
    -------
    Policy
        A new policy of the scheme's class (the registry row's ``build``), with the knobs
        of ``cfg.scheme_params()``.

    Raises
    ------
    ValueError
        For an unknown ``cfg.strategy``, a scheme without a policy (``fedavg``)
        or invalid policy arguments.
    """
    entry = scheme(cfg.strategy)
    if entry.build is None:
        raise ValueError(
            f"strategy={cfg.strategy!r} has no policy; the policies are {', '.join(STRATEGIES)}"
        )
    return entry.build(clients, cfg.scheme_params(), frozenset(known_outliers))

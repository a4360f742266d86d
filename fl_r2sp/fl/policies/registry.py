"""The one registry of schemes: name -> policy, Flower class, description.

Run-config validation (:mod:`fl_r2sp.fl.config`), the policy factory
(:mod:`fl_r2sp.fl.policies.factory`) and the Flower adapters
(:mod:`fl_r2sp.fl.flower.strategy`) all read this table; adding a scheme means
adding one row here (plus its policy and, for Flower, a class of the named
name in ``fl_r2sp.fl.flower.strategy``). A scheme's name is its policy's
``name`` attribute, so it is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fl_r2sp.fl.policies.asp import ASPPolicy, FedAsyncPolicy
from fl_r2sp.fl.policies.base import Policy
from fl_r2sp.fl.policies.bsp import BSPPolicy
from fl_r2sp.fl.policies.fedbuff import FedBuffPolicy
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import SchemeParams

#: Builds a policy: ``(clients, scheme knobs, known outlier ids) -> Policy``.
PolicyBuilder = Callable[[Sequence[int], SchemeParams, frozenset[int]], Policy]


@dataclass(frozen=True)
class Scheme:
    """One federated scheme.

    Attributes
    ----------
    name : str
        Run-config ``strategy`` value (e.g. ``"fl-r2sp"``).
    policy : type of Policy or None
        The plain-Python policy; None for Flower's stock FedAvg (no policy).
    build : callable or None
        The policy's ``from_scheme`` (None without a policy).
    flower_class : str
        Name of the Flower ``Strategy`` class: in ``fl_r2sp.fl.flower.strategy``,
        or ``flwr``'s own ``FedAvg`` for the baseline.
    description : str
        One line for logs and documentation.
    """

    name: str
    policy: type[Policy] | None
    build: PolicyBuilder | None
    flower_class: str
    description: str


def _row(policy: type[FLR2SPPolicy] | type[ASPPolicy], flower: str, description: str) -> Scheme:
    return Scheme(policy.name, policy, policy.from_scheme, flower, description)


_ROWS = (
    _row(FLR2SPPolicy, "FLR2SP", "FL-R²SP: groups, fractional collection, round-robin gaps"),
    _row(BSPPolicy, "BSP", "BSP: synchronous rounds collecting the first C·N updates (M = 1)"),
    _row(ASPPolicy, "ASP", "ASP: every update mixed in at once, (N'-1)/N' averaging by default"),
    _row(FedAsyncPolicy, "FedAsync", "FedAsync: ASP with the staleness-weighted mixing weight"),
    _row(FedBuffPolicy, "FedBuff", "FedBuff: buffered asynchronous aggregation of K deltas"),
    Scheme("fedavg", None, None, "FedAvg", "Flower's stock FedAvg (round-synchronous, real time)"),
)

#: Scheme name -> :class:`Scheme`, read-only.
SCHEMES: Mapping[str, Scheme] = MappingProxyType({s.name: s for s in _ROWS})


def scheme(name: str) -> Scheme:
    """The registered scheme called ``name``.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    try:
        return SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(SCHEMES)}") from None

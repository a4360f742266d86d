"""The policy interface: plain Python decisions over flat NumPy weight vectors.

A *policy* is the decision logic of one federated scheme (FL-R²SP, BSP, ASP,
FedBuff). It knows nothing of Flower messages, torch, clocks or networks: the
server loop (``fl_r2sp.fl.server``) feeds it events stamped with the current time
(virtual or wall seconds) and executes the decisions it returns, in order.

Events a policy reacts to
-------------------------
``start(now, weights, clients)``
    The run begins; ``clients`` are partition ids (stable across runs, unlike
    Flower node ids).
``on_update(now, update)``
    A client's update (already validated: right size, finite) has fully
    arrived at the server.
``on_failure(now, cid, tag, reason)``
    A client's job failed (error reply, lost node). The policy must free the
    client: re-send it a model or drop it, and make sure no group or round
    waits for it.
``on_rejected(now, cid, tag, reason)``
    A client's update arrived but failed admission (``reason`` says why).
    Default: handled as ``on_failure``; FL-R²SP and BSP count it as an answer
    that is excluded from the aggregate (``docs/architecture.md`` §6).
``on_timer(now, key)``
    A timer the policy asked for (``Timer``) fired.
``on_rejoin(now, cid)``
    A client the transport had lost is reachable again (a restarted node
    re-attached to its partition). A policy that dropped it takes it back.

Decisions a policy returns
--------------------------
``Send``: send ``weights`` to clients, each job tagged with ``tag``.
``Timer``: call ``on_timer(key)`` at time ``at`` (never earlier than now).
``ModelUpdated``: the global model changed (the loop evaluates / logs).
``Record``: a telemetry row (kind + fields) for the event log.
``Stop``: the policy cannot make progress any more (e.g. every client lost).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Update:
    """One client's finished local training job, as the server received it.

    Attributes
    ----------
    cid : int
        Partition id of the client.
    weights : np.ndarray
        Full model weights after local training, flat float32 vector.
    num_examples : int
        Number of training examples the client holds (for weighted means).
    tag : int
        Tag of the job this update answers (the ``Send.tag`` it received).
    loss : float
        Mean training loss of the local iterations (NaN if unknown).
    """

    cid: int
    weights: np.ndarray
    num_examples: int
    tag: int
    loss: float = float("nan")


@dataclass(frozen=True)
class Send:
    """Send ``weights`` to every client in ``cids`` as a new training job."""

    cids: tuple[int, ...]
    weights: np.ndarray
    tag: int


@dataclass(frozen=True)
class Timer:
    """Ask the loop to call ``on_timer(now=at, key=key)`` at time ``at``."""

    at: float
    key: Hashable


@dataclass(frozen=True)
class ModelUpdated:
    """The global model changed; ``version`` counts global updates so far."""

    version: int
    weights: np.ndarray


@dataclass(frozen=True)
class Record:
    """A telemetry row: ``kind`` (e.g. ``"group_apply"``) and its fields."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Stop:
    """The policy cannot make progress any more (``reason`` says why)."""

    reason: str


Decision = Send | Timer | ModelUpdated | Record | Stop


class Policy(ABC):
    """Base class of scheme policies (see module docstring for the protocol)."""

    #: Short name used in logs and result files.
    name: str = "policy"
    #: Ids of the participating clients (each subclass's constructor sets it).
    _clients: tuple[int, ...]

    @abstractmethod
    def start(self, now: float, weights: np.ndarray, clients: Sequence[int]) -> list[Decision]:
        """Begin the run with initial ``weights`` and the participating clients."""

    @abstractmethod
    def on_update(self, now: float, update: Update) -> list[Decision]:
        """React to a fully received, validated client update."""

    @abstractmethod
    def on_failure(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        """React to a failed or rejected job of client ``cid``."""

    def on_rejected(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        """React to an update of ``cid`` rejected by admission (default: as a failure)."""
        return self.on_failure(now, cid, tag, reason)

    def on_timer(self, now: float, key: Hashable) -> list[Decision]:
        """React to a timer set with :class:`Timer` (default: ignore)."""
        return []

    def on_rejoin(self, now: float, cid: int) -> list[Decision]:
        """React to client ``cid`` being reachable again (default: nothing to do)."""
        return []

    def group_of(self, cid: int) -> int | None:
        """Group id of client ``cid`` for telemetry (default: None = the scheme has no groups)."""
        return None

    @property
    @abstractmethod
    def weights(self) -> np.ndarray:
        """Current global model (flat float32 vector)."""

    @property
    @abstractmethod
    def version(self) -> int:
        """Number of global model updates applied so far."""

    def summary(self) -> dict[str, Any]:
        """Scheme-specific summary figures (e.g. outlier precision/recall)."""
        return {}

"""ASP policy: every arriving update is mixed into the global model at once.

``mixing="average"`` (default; our reading of the paper's unspecified ASP
baseline, ``docs/paper-notes.md`` §2.3 item 12):
``w <- (N'-1)/N' * w + 1/N' * w_i`` with ``N'`` the active clients.
``mixing="fedasync"`` (Xie et al., 2019): ``alpha_t = alpha * s(t)`` with
``t = version now - version the client started from`` and
``w <- (1 - alpha_t) * w + alpha_t * w_i``. The ``"fedasync"`` strategy name
is this policy with FedAsync mixing.

Each job is tagged with the global version it carries, so the staleness of
an update is ``version - update.tag``. After its update is merged, the client
gets the new model back at once. No outlier filter: clients never share a
starting model (the paper's footnote 9).

Records: ``client_update`` (cid, tag, staleness, weight, version, loss,
num_examples); ``client_failure`` (cid, tag, reason, consecutive, dropped);
``ignored`` (cid, what, why).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from fl_r2sp.strategies.aggregation import mix
from fl_r2sp.strategies.base import Decision, ModelUpdated, Policy, Record, Send, Stop, Update
from fl_r2sp.strategies.common import (
    FailureCounter,
    as_model,
    check_start_clients,
    client_list,
    ignored,
)
from fl_r2sp.strategies.staleness import StalenessFn

AspMixingKind = Literal["average", "fedasync"]


class ASPPolicy(Policy):
    """Asynchronous FL: merge each update on arrival.

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count).
    mixing : {"average", "fedasync"}, default "average"
        See the module docstring.
    alpha : float, default 0.6
        FedAsync mixing weight before staleness, in (0, 1].
    staleness : StalenessFn, default constant
        FedAsync staleness function ``s(t)`` (ignored by ``average``).
    max_failures : int, default 3
        Consecutive failed jobs re-sent before the client is dropped.
    """

    name = "asp"

    def __init__(
        self,
        clients: int | Sequence[int],
        mixing: AspMixingKind = "average",
        alpha: float = 0.6,
        staleness: StalenessFn | None = None,
        max_failures: int = 3,
    ) -> None:
        if mixing not in ("average", "fedasync"):
            raise ValueError(f"asp mixing={mixing!r} is not one of 'average', 'fedasync'")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"mixing alpha={alpha} must lie in (0, 1]")
        self._clients = client_list(clients)
        self.mixing: AspMixingKind = mixing
        self.alpha = float(alpha)
        self.staleness = staleness if staleness is not None else StalenessFn()
        self.failures = FailureCounter(max_failures)
        self._w = np.zeros(0, dtype=np.float32)
        self._version = 0
        self._inflight: dict[int, int] = {}
        self._started = False
        self._stopped = False
        self.max_staleness = 0

    @property
    def weights(self) -> np.ndarray:
        return self._w

    @property
    def version(self) -> int:
        return self._version

    def start(self, now: float, weights: np.ndarray, clients: Sequence[int]) -> list[Decision]:
        check_start_clients(self._clients, clients)
        self._w = as_model(weights)
        self._started = True
        return self._send(list(self._clients))

    def mixing_weight(self, staleness: int) -> float:
        """Weight of an update ``staleness`` versions old in the mix."""
        if self.mixing == "average":
            return 1.0 / max(1, self._num_active())
        return self.alpha * self.staleness(staleness)

    def _admit(self, now: float, update: Update) -> tuple[int, int] | list[Decision]:
        """(cid, staleness) of an accepted update, or the record of an ignored one."""
        cid = self._known(update.cid)
        if self._inflight.pop(cid, None) is None or cid in self.failures.dropped:
            return [ignored(now, cid, "update", "no job in flight or client dropped")]
        self.failures.success(cid)
        staleness = self._version - update.tag
        if staleness < 0:
            raise ValueError(
                f"update of client {cid} has tag {update.tag} > version {self._version}: "
                "tags must echo the Send.tag of the job"
            )
        self.max_staleness = max(self.max_staleness, staleness)
        return cid, staleness

    def on_update(self, now: float, update: Update) -> list[Decision]:
        admitted = self._admit(now, update)
        if isinstance(admitted, list):
            return admitted
        cid, staleness = admitted
        weight = self.mixing_weight(staleness)
        self._w = mix(self._w, update.weights, weight)
        self._version += 1
        out: list[Decision] = [
            Record("client_update", {
                "t": now, "cid": cid, "tag": update.tag, "staleness": staleness,
                "weight": weight, "version": self._version, "loss": update.loss,
                "num_examples": update.num_examples}),
            ModelUpdated(self._version, self._w),
        ]
        return out + self._send([cid])

    def on_failure(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        cid = self._known(cid)
        if self._inflight.pop(cid, None) is None or cid in self.failures.dropped:
            return [ignored(now, cid, "failure", "no job in flight or client dropped")]
        dropped = self.failures.failure(cid)
        out: list[Decision] = [Record("client_failure", {
            "t": now, "cid": cid, "tag": tag, "reason": reason,
            "consecutive": self.failures.consecutive(cid), "dropped": dropped})]
        if not dropped:
            return out + self._send([cid])
        if self._num_active() == 0 and not self._stopped:
            self._stopped = True
            out.append(Stop("every client was dropped after repeated failures"))
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "version": self._version,
            "mixing": self.mixing,
            "max_staleness": self.max_staleness,
            "num_failures": self.failures.total,
            "dropped": sorted(self.failures.dropped),
        }

    def _known(self, cid: int) -> int:
        cid = int(cid)
        if not self._started:
            raise ValueError("event before start(): call start() first")
        if cid not in self._clients:
            raise ValueError(f"client {cid} is not one of this run's clients")
        return cid

    def _num_active(self) -> int:
        return len(self._clients) - len(self.failures.dropped)

    def _send(self, cids: list[int]) -> list[Decision]:
        for cid in cids:
            self._inflight[cid] = self._version
        return [Send(tuple(sorted(cids)), self._w, self._version)] if cids else []


class FedAsyncPolicy(ASPPolicy):
    """FedAsync (Xie et al., 2019): :class:`ASPPolicy` with ``mixing="fedasync"``.

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count).
    alpha : float, default 0.6
        Mixing weight before staleness.
    staleness : StalenessFn, default constant
        ``s(t)``; ``alpha_t = alpha * s(t)``.
    max_failures : int, default 3
        Consecutive failed jobs re-sent before the client is dropped.
    """

    name = "fedasync"

    def __init__(
        self,
        clients: int | Sequence[int],
        alpha: float = 0.6,
        staleness: StalenessFn | None = None,
        max_failures: int = 3,
    ) -> None:
        super().__init__(clients, mixing="fedasync", alpha=alpha, staleness=staleness,
                         max_failures=max_failures)

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
``client_rejoin`` (cid, group=None, revived: a dropped client reachable again
is taken back and sent the current model); ``ignored`` (cid, what, why).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from fl_r2sp.fl.policies.aggregation import mix
from fl_r2sp.fl.policies.base import Decision, ModelUpdated, Policy, Record, Send, Stop, Update
from fl_r2sp.fl.policies.common import (
    FailureCounter,
    as_model,
    check_start_clients,
    client_list,
    ignored,
    rejoined,
)
from fl_r2sp.fl.policies.params import MAX_FAILURES, AspMixingKind, AsyncParams, SchemeParams
from fl_r2sp.fl.policies.staleness import StalenessFn


class ASPPolicy(Policy):
    """Asynchronous FL: merge each update on arrival.

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count).
    params : AsyncParams, default AsyncParams()
        ``mixing`` (see the module docstring), ``alpha`` and ``staleness``
        (FedAsync mixing; ignored by ``average``) are read
        (:class:`~fl_r2sp.fl.policies.params.AsyncParams` states the defaults).
    max_failures : int, default MAX_FAILURES (3)
        Consecutive failed jobs re-sent before the client is dropped.
    """

    name = "asp"

    def __init__(
        self,
        clients: int | Sequence[int],
        params: AsyncParams | None = None,
        max_failures: int = MAX_FAILURES,
    ) -> None:
        params = params if params is not None else AsyncParams()
        self._clients = client_list(clients)
        self.params = params
        self.mixing: AspMixingKind = params.mixing
        self.alpha = float(params.alpha)
        self.staleness: StalenessFn = params.staleness
        self.failures = FailureCounter(max_failures)
        self._w = np.zeros(0, dtype=np.float32)
        self._version = 0
        self._inflight: dict[int, int] = {}
        self._started = False
        self._stopped = False
        self.max_staleness = 0

    @classmethod
    def from_scheme(
        cls, clients: Sequence[int], scheme: SchemeParams, known_outliers: frozenset[int]
    ) -> ASPPolicy:
        """The policy a run configuration's scheme knobs describe (the registry's builder).

        ``known_outliers`` is not used: the asynchronous schemes have no outlier filter.
        """
        return cls(clients, scheme.asynchronous, scheme.max_failures)

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
            self._update_record(now, cid, update, staleness, weight),
            ModelUpdated(self._version, self._w),
        ]
        return out + self._send([cid])

    def _update_record(
        self, now: float, cid: int, update: Update, staleness: int, weight: float, **extra: Any
    ) -> Record:
        """The ``client_update`` record of an admitted update.

        ``extra`` fields (FedBuff's ``buffered``) come after ``weight``, so the
        columns keep one order; ``version`` is the one current at the call.
        """
        return Record(
            "client_update",
            {
                "t": now,
                "cid": cid,
                "tag": update.tag,
                "staleness": staleness,
                "weight": weight,
                **extra,
                "version": self._version,
                "loss": update.loss,
                "num_examples": update.num_examples,
            },
        )

    def on_failure(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        cid = self._known(cid)
        if self._inflight.pop(cid, None) is None or cid in self.failures.dropped:
            return [ignored(now, cid, "failure", "no job in flight or client dropped")]
        dropped = self.failures.failure(cid)
        out: list[Decision] = [
            Record(
                "client_failure",
                {
                    "t": now,
                    "cid": cid,
                    "tag": tag,
                    "reason": reason,
                    "consecutive": self.failures.consecutive(cid),
                    "dropped": dropped,
                },
            )
        ]
        if not dropped:
            return out + self._send([cid])
        if self._num_active() == 0 and not self._stopped:
            self._stopped = True
            out.append(Stop("every client was dropped after repeated failures"))
        return out

    def on_rejoin(self, now: float, cid: int) -> list[Decision]:
        cid = self._known(cid)
        if self._stopped or not self.failures.revive(cid):
            return [rejoined(now, cid, None, False)]  # it was never dropped: nothing to redo
        return [rejoined(now, cid, None, True), *self._send([cid])]

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
    params : AsyncParams, default AsyncParams()
        ``alpha`` (mixing weight before staleness) and ``staleness`` ``s(t)``
        are read, ``alpha_t = alpha * s(t)``; ``mixing`` is forced to fedasync.
    max_failures : int, default MAX_FAILURES (3)
        Consecutive failed jobs re-sent before the client is dropped.
    """

    name = "fedasync"

    def __init__(
        self,
        clients: int | Sequence[int],
        params: AsyncParams | None = None,
        max_failures: int = MAX_FAILURES,
    ) -> None:
        params = params if params is not None else AsyncParams()
        super().__init__(clients, dataclasses.replace(params, mixing="fedasync"), max_failures)

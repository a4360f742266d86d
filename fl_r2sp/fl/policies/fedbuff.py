"""FedBuff policy (Nguyen et al., 2022): buffered asynchronous aggregation.

Each update contributes its delta ``w_i - w_start`` (``w_start`` = the model
the client was sent) weighted by ``s(t)``, ``t`` = its staleness in global
versions. When ``K`` deltas are buffered:
``w <- w + server_lr * mean_k(s(t_k) * delta_k)``, version + 1. Every client
gets the current model back right after its update (after the step, if its
update completed the buffer).

Memory: a client's start model is a reference to the global vector of its
version, so one copy is kept per distinct version still held by a client.

With ``K = 1``, a constant ``s`` and no staleness (e.g. one client, or clients
taking turns), the step is ``w + lr * (w_i - w)`` = FedAsync mixing with
``alpha = server_lr``; a test checks this equivalence.

Records: ``client_update`` (cid, tag, staleness, weight, buffered, version,
loss, num_examples); ``buffer_apply`` (version, size); plus ASP's failure rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from fl_r2sp.fl.policies.asp import ASPPolicy
from fl_r2sp.fl.policies.base import Decision, ModelUpdated, Record, Update
from fl_r2sp.fl.policies.params import MAX_FAILURES, AsyncParams


class FedBuffPolicy(ASPPolicy):
    """Buffered asynchronous FL.

    Parameters
    ----------
    clients : int or sequence of int
        Partition ids (or their count).
    params : AsyncParams, default AsyncParams()
        ``buffer_size`` (K, updates per server step), ``server_lr`` (on the mean
        buffered delta) and ``staleness`` (``s(t)`` weighting each buffered
        delta) are read (:class:`~fl_r2sp.fl.policies.params.AsyncParams` states
        the defaults).
    max_failures : int, default MAX_FAILURES (3)
        Consecutive failed jobs re-sent before the client is dropped.
    """

    name = "fedbuff"

    def __init__(
        self,
        clients: int | Sequence[int],
        params: AsyncParams | None = None,
        max_failures: int = MAX_FAILURES,
    ) -> None:
        params = params if params is not None else AsyncParams()
        # The ASP machinery with FedAsync's weight s(t) and no mixing (alpha = 1).
        super().__init__(
            clients, dataclasses.replace(params, mixing="fedasync", alpha=1.0), max_failures
        )
        self.buffer_size = int(params.buffer_size)
        self.server_lr = float(params.server_lr)
        self._sent: dict[int, np.ndarray] = {}
        self._buffer: np.ndarray | None = None
        self._buffered = 0

    def on_update(self, now: float, update: Update) -> list[Decision]:
        admitted = self._admit(now, update)
        if isinstance(admitted, list):
            return admitted
        cid, staleness = admitted
        weight = self.staleness(staleness)
        start = self._sent.pop(cid)
        delta = np.asarray(update.weights, np.float64) - np.asarray(start, np.float64)
        if self._buffer is None:
            self._buffer = np.zeros_like(delta)
        self._buffer += weight * delta  # summed in arrival order: deterministic
        self._buffered += 1
        out: list[Decision] = [
            self._update_record(now, cid, update, staleness, weight, buffered=self._buffered)
        ]
        if self._buffered >= self.buffer_size:
            out += self._step(now)
        return out + self._send([cid])

    def on_failure(self, now: float, cid: int, tag: int, reason: str) -> list[Decision]:
        out = super().on_failure(now, cid, tag, reason)
        if cid in self.failures.dropped:
            self._sent.pop(cid, None)  # release its start model
        return out

    def summary(self) -> dict[str, Any]:
        out = {
            **super().summary(),
            "buffer_size": self.buffer_size,
            "server_lr": self.server_lr,
            "buffered": self._buffered,
        }
        out.pop("mixing")
        return out

    def _step(self, now: float) -> list[Decision]:
        assert self._buffer is not None
        step = self.server_lr * self._buffer / self._buffered
        self._w = (np.asarray(self._w, np.float64) + step).astype(self._w.dtype)
        self._version += 1
        size = self._buffered
        self._buffer, self._buffered = None, 0
        return [
            ModelUpdated(self._version, self._w),
            Record("buffer_apply", {"t": now, "version": self._version, "size": size}),
        ]

    def _send(self, cids: list[int]) -> list[Decision]:
        for cid in cids:
            self._sent[cid] = self._w  # shared reference: one copy per live version
        return super()._send(cids)

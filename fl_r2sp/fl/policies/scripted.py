"""A scripted driver for policies: feed events at given times, run timers in order.

Used by the policy tests and the event-loop cost benchmark. It plays the
server loop's part without any network: the script says when each client's
update arrives (and with which weights); the driver fires the policy's timers
in time order before every scripted event, remembers what each client was
last sent, and logs every decision with its time.

Ties: a timer due at exactly the time of a scripted event fires first.

Example
-------
>>> policy = FLR2SPPolicy(4, GroupParams(num_groups=2, fraction=0.5))   # doctest: +SKIP
>>> drv = ScriptedDriver(policy)                                        # doctest: +SKIP
>>> drv.start(np.zeros(2, np.float32))                                  # doctest: +SKIP
>>> drv.update(1.0, cid=0, delta=[1.0, 0.0])                            # doctest: +SKIP
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from fl_r2sp.fl.policies.base import (
    Decision,
    ModelUpdated,
    Policy,
    Record,
    Send,
    Stop,
    Timer,
    Update,
)


class ScriptedDriver:
    """Drive ``policy`` through a script of updates, failures and timers.

    Parameters
    ----------
    policy : Policy
        The policy under test (not yet started).
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.now = 0.0
        self.log: list[tuple[float, Decision]] = []
        #: cid -> (tag, weights) of the last job each client was sent.
        self.jobs: dict[int, tuple[int, np.ndarray]] = {}
        self.stopped: str | None = None
        self._timers: list[tuple[float, int, Hashable]] = []
        self._seq = 0

    def start(
        self,
        weights: Sequence[float] | np.ndarray,
        clients: Sequence[int] | None = None,
        now: float = 0.0,
    ) -> list[Decision]:
        """Start the policy with ``weights`` (default clients: the policy's own)."""
        ids = clients if clients is not None else self.policy._clients
        self.now = float(now)
        return self._handle(self.policy.start(self.now, np.asarray(weights, np.float32), ids))

    def advance_to(self, t: float) -> list[Decision]:
        """Fire every timer due at or before ``t`` (in time order); clock -> ``t``."""
        if t < self.now:
            raise ValueError(f"script goes back in time: {t} < now {self.now}")
        out: list[Decision] = []
        while self._timers and self._timers[0][0] <= t:
            at, _, key = heapq.heappop(self._timers)
            self.now = at
            out += self._handle(self.policy.on_timer(at, key))
        self.now = float(t)
        return out

    def update(
        self,
        t: float,
        cid: int,
        weights: Sequence[float] | np.ndarray | None = None,
        delta: Sequence[float] | np.ndarray | None = None,
        num_examples: int = 1,
        tag: int | None = None,
    ) -> list[Decision]:
        """Deliver ``cid``'s update at ``t``: full ``weights`` or ``delta`` from its job's model.

        ``tag`` defaults to the tag of the client's last job.
        """
        self.advance_to(t)
        job_tag, sent = self.jobs[cid]
        if weights is None:
            if delta is None:
                raise ValueError("pass weights or delta")
            weights = np.asarray(sent, np.float64) + np.asarray(delta, np.float64)
        up = Update(
            cid, np.asarray(weights, np.float32), num_examples, job_tag if tag is None else tag
        )
        return self._handle(self.policy.on_update(self.now, up))

    def fail(self, t: float, cid: int, reason: str = "error") -> list[Decision]:
        """Report that ``cid``'s current job failed at ``t``."""
        self.advance_to(t)
        tag = self.jobs[cid][0]
        return self._handle(self.policy.on_failure(self.now, cid, tag, reason))

    def reject(self, t: float, cid: int, reason: str = "norm") -> list[Decision]:
        """Report that ``cid``'s update arrived at ``t`` and failed admission."""
        self.advance_to(t)
        tag = self.jobs[cid][0]
        return self._handle(self.policy.on_rejected(self.now, cid, tag, reason))

    def finish(self) -> list[Decision]:
        """Fire all remaining timers."""
        if not self._timers:
            return []
        return self.advance_to(max(at for at, _, _ in self._timers))

    # ------------------------------------------------------------- queries
    def of(self, kind: type) -> list[tuple[float, Any]]:
        """Logged decisions of one class, with their times."""
        return [(t, d) for t, d in self.log if isinstance(d, kind)]

    def records(self, kind: str) -> list[dict[str, Any]]:
        """Fields of the logged records of one kind."""
        return [d.fields for _, d in self.log if isinstance(d, Record) and d.kind == kind]

    def sends_to(self, cid: int) -> list[tuple[float, Send]]:
        """Every Send that included ``cid``, with its time."""
        return [(t, s) for t, s in self.of(Send) if cid in s.cids]

    def models(self) -> list[tuple[float, ModelUpdated]]:
        """Every ModelUpdated, with its time."""
        return self.of(ModelUpdated)

    def _handle(self, decisions: list[Decision]) -> list[Decision]:
        for d in decisions:
            self.log.append((self.now, d))
            if isinstance(d, Send):
                for cid in d.cids:
                    self.jobs[cid] = (d.tag, d.weights)
            elif isinstance(d, Timer):
                if d.at < self.now:
                    raise AssertionError(f"timer at {d.at} set in the past (now {self.now})")
                heapq.heappush(self._timers, (d.at, self._seq, d.key))
                self._seq += 1
            elif isinstance(d, Stop):
                self.stopped = d.reason
        return decisions

"""SAFA, the ToN paper's semi-synchronous baseline, adapted to a parameter server.

SAFA (Wu et al., IEEE TC 2021) synchronises the participants that report in time and absorbs
stragglers' updates while their lag is tolerable; deprecated (too stale) participants are forced
to resync. Our PS reading (the ToN paper gives no parameters; the knobs are documented in
:class:`SAFAParams`):

* **Rounds.** Each permission carries the round ``r`` whose model the worker pulls. A push by a
  worker that pulled the *current* round's model is *fresh*: the worker waits. The round closes
  when ``ceil(quorum · live)`` fresh pushes are in (the first to come are the synchronous set,
  SAFA's first-come-first-merge quota), or ``deadline_s`` after it opened if at least one fresh
  push is in. At the close every waiting worker gets its permission for round ``r + 1`` at once.
* **Stragglers.** A push whose permission belongs to an older round ``r' < r`` comes from a
  straggler with staleness ``r - r'`` (rounds closed since its pull). It is *absorbed* if
  ``r - r' <= staleness_bound`` and *discarded* otherwise (SAFA's deprecated client); either way
  the worker proceeds at once and pulls the latest model (the forced resync; in a PS every
  iteration starts with a pull), joining the open round.
* **Applying.** :attr:`apply_mode` is ``"immediate"`` and :attr:`admission` is true: the verdict
  on an update is taken when its report arrives (the round state at that instant), through
  :meth:`accepts`, asked right before :meth:`on_push` (a pure query; ``on_push`` then records
  the same verdict). The runtime's shards hold each push until the coordinator publishes that
  verdict and apply only fresh and absorbed updates; the twin asks the same query at the same
  point of its event order.
* A lost worker leaves the quorum count (it may close the round) and is never waited for.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import ClassVar, Self

from fl_r2sp.cluster.policies.common.base import ApplyMode, Permission, PushReport
from fl_r2sp.cluster.policies.common.params import PSParams, check_fraction, check_int
from fl_r2sp.cluster.policies.common.trace import TracedPolicy


class SAFAPolicy(TracedPolicy):
    """Semi-synchronous coordinator (see the module docstring).

    Parameters
    ----------
    num_workers : int
        N >= 1.
    batch_size : int
        Batch size of every worker (>= 1).
    params : SAFAParams
        Lag tolerance, quorum and round deadline.
    """

    name: ClassVar[str] = "safa"
    apply_mode: ClassVar[ApplyMode] = "immediate"
    admission: bool = True

    def __init__(
        self,
        num_workers: int,
        batch_size: int,
        params: SAFAParams,
    ) -> None:
        super().__init__(num_workers, batch_size)
        params.validate()
        self.staleness_bound = params.staleness_bound
        self.quorum = float(params.quorum)
        self.deadline_s = float(params.deadline_s)
        self.round = 0
        self.opened_at = 0.0
        self.waiting: dict[int, int] = {}  # fresh worker -> iteration it will start
        self.pulled_round: dict[int, int] = dict.fromkeys(range(num_workers), 0)
        self.discarded: set[tuple[int, int]] = set()  # (worker, iteration)

    def need(self) -> int:
        """Fresh pushes that close the round: ``ceil(quorum · live)``, at least 1."""
        return max(1, math.ceil(self.quorum * len(self.live) - 1e-9))

    def staleness(self, worker: int) -> int:
        """Rounds closed since ``worker`` pulled (0 = fresh)."""
        return self.round - self.pulled_round[worker]

    def accepts(self, worker: int) -> bool:
        """Whether ``worker``'s push arriving now is applied: a live worker's with staleness
        <= bound (a lost worker's push is ignored, as in :meth:`on_push`)."""
        return worker in self.live and self.staleness(worker) <= self.staleness_bound

    def start(self, now: float) -> list[Permission]:
        """Every worker starts iteration 0 in round 0."""
        self.opened_at = now
        return [self.grant(w, 0, now, round=0) for w in sorted(self.live)]

    def on_push(self, report: PushReport) -> list[Permission]:
        """Fresh push: wait for the quorum. Straggler: absorb or discard, proceed at once."""
        if not self.check_report(report):
            return []
        w, now, nxt = report.worker, report.now, report.iteration + 1
        stale = self.staleness(w)
        if stale == 0:
            self.waiting[w] = nxt
            perms = self._maybe_close(now, deadline=False)
            if w in self.waiting:
                self.note("hold", now, worker=w, iteration=nxt, round=self.round, why="quorum")
            return perms
        verdict = "absorb" if stale <= self.staleness_bound else "discard"
        if verdict == "discard":
            self.discarded.add((w, report.iteration))
        self.note(verdict, now, worker=w, iteration=report.iteration, staleness=stale)
        self.pulled_round[w] = self.round
        return [self.grant(w, nxt, now, round=self.round)]

    def _maybe_close(self, now: float, deadline: bool) -> list[Permission]:
        if not self.waiting or (not deadline and len(self.waiting) < self.need()):
            return []
        self.note(
            "round",
            now,
            round=self.round,
            synced=sorted(self.waiting),
            why="deadline" if deadline else "quorum",
        )
        self.round += 1
        self.opened_at = now
        perms = []
        for w in sorted(self.waiting):
            self.pulled_round[w] = self.round
            perms.append(self.grant(w, self.waiting[w], now, round=self.round))
        self.waiting = {}
        return perms

    def next_deadline(self) -> float | None:
        """The round deadline, while fresh pushes wait and a deadline is set."""
        if self.waiting and math.isfinite(self.deadline_s):
            return self.opened_at + self.deadline_s
        return None

    def on_timer(self, now: float) -> list[Permission]:
        """Close the round if its deadline has passed."""
        due = self.next_deadline()
        return self._maybe_close(now, deadline=True) if due is not None and now >= due else []

    def on_worker_lost(self, worker: int, now: float) -> list[Permission]:
        """Drop ``worker`` from the quorum; close the round if the rest suffice."""
        super().on_worker_lost(worker, now)
        self.waiting.pop(worker, None)
        return self._maybe_close(now, deadline=False)


@dataclass(frozen=True, kw_only=True)
class SAFAParams(PSParams):
    """SAFA's record. The ToN paper gives no SAFA parameters; these defaults are ours: the
    bound equals the SSP bound of the same experiments, and the quorum makes the 4 undelayed
    workers of the 8-worker transformer setup the synchronous set.

    Parameters
    ----------
    scheme : str, default "safa"
    staleness_bound : int, default 5
        Lag tolerance (>= 0): a straggler's update is absorbed while the rounds closed since
        its pull are <= this bound, else it is discarded and the worker resyncs.
    quorum : float, default 0.5
        Fraction in (0, 1] of the live workers whose fresh pushes close a round.
    deadline_s : float, default inf
        A round also closes this long after it opened if at least one fresh push arrived
        (seconds on the caller's clock, > 0; inf = quorum only).
    """

    scheme: str = "safa"
    staleness_bound: int = 5
    quorum: float = 0.5
    deadline_s: float = math.inf

    def check(self) -> None:
        """Raise ValueError naming the first bad knob."""
        check_int("safa_staleness_bound", self.staleness_bound, 0)
        check_fraction("safa_quorum", self.quorum, low_open=True)
        if not (isinstance(self.deadline_s, int | float) and self.deadline_s > 0):
            raise ValueError(f"safa_deadline_s must be > 0 seconds, got {self.deadline_s!r}")

    def make(self, num_workers: int, batch_size: int) -> SAFAPolicy:
        """A :class:`SAFAPolicy` for ``num_workers`` workers."""
        return SAFAPolicy(num_workers, batch_size, self)

    @classmethod
    def add_flags(cls, group: argparse._ArgumentGroup) -> None:
        """``--safa-staleness-bound``, ``--safa-quorum``, ``--safa-deadline``."""
        d, a = cls(), group.add_argument
        a("--safa-staleness-bound", type=int, default=d.staleness_bound,
          help=f"SAFA lag tolerance [{d.staleness_bound}]")  # fmt: skip
        a("--safa-quorum", type=float, default=d.quorum, help=f"SAFA quorum [{d.quorum}]")
        a("--safa-deadline", type=float, default=d.deadline_s,
          help=f"SAFA round deadline s [{d.deadline_s}]")  # fmt: skip

    @classmethod
    def from_flags(cls, scheme: str, ns: argparse.Namespace) -> Self:
        """The record from the SAFA flags."""
        return cls(scheme=scheme, staleness_bound=ns.safa_staleness_bound,
                   quorum=ns.safa_quorum, deadline_s=ns.safa_deadline)  # fmt: skip

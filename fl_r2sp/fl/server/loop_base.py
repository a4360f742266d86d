"""What both server loops share: executing policy decisions, evaluation, stop rules.

The virtual-time loop (:mod:`fl_r2sp.fl.server.virtual_loop`) and the wall-clock
loop (:mod:`fl_r2sp.fl.server.wall_loop`) differ only in how time passes and how
transfers are timed; both hand every decision of the policy to the methods
here, in the order the policy returned them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fl_r2sp.emulation.clock import Clock
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.base import Decision, ModelUpdated, Policy, Record, Send, Stop, Timer
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.admission import Admission, AdmissionParams, Verdict
from fl_r2sp.fl.server.transport import Transport
from fl_r2sp.telemetry.eventlog import EventLog

log = logging.getLogger("fl_r2sp")


class StateSaver(Protocol):
    """What the loop asks of its checkpointer (:class:`fl_r2sp.fl.server.checkpoint.Checkpointer`).

    A protocol here, so that the loops need not import the checkpoint module, which
    imports them to rebuild them.
    """

    #: The version last written (the checkpoint module sets it on resume).
    saved_version: int

    def maybe_save(self, loop: LoopBase) -> bool:
        """Save ``loop``'s state if a checkpoint is due; True if saved."""
        ...


@dataclass(frozen=True)
class VersionedEvaluator:
    """An evaluator told which global update it scores.

    Flower's ``evaluate_fn(server_round, arrays)`` numbers its calls by round; the loops pass
    the version (global update number) of the weights they score, so a user's own log keys
    match ``Result.evaluate_metrics_serverapp`` for any ``eval-every``.

    Attributes
    ----------
    score : callable
        ``score(version, weights) -> (loss, accuracy)``.
    """

    score: Callable[[int, np.ndarray], tuple[float, float]]


#: A plain ``weights -> (loss, accuracy)`` callable, or one told the version it scores.
Evaluator = Callable[[np.ndarray], tuple[float, float]] | VersionedEvaluator


@dataclass
class StopRule:
    """When a run ends (any condition that is set ends it).

    Attributes
    ----------
    max_updates : int (default: 0 = no limit)
        Number of global model updates.
    time_budget : float (default: 0 = none)
        Run time in seconds of the loop's clock.
    convergence_window : int (default: 0 = off)
        Stop when the best accuracy has not improved by more than ``tol`` for
        this many consecutive evaluations (the paper uses 10).
    tol : float (default: 0.001)
        Accuracy gain that counts as progress.
    """

    max_updates: int = 0
    time_budget: float = 0.0
    convergence_window: int = 0
    tol: float = 0.001
    _best: float = field(default=-1.0, repr=False)
    _stale: int = field(default=0, repr=False)
    #: Time of the last evaluation that improved the best accuracy (None before any).
    _window_start: float | None = field(default=None, repr=False)
    converged_at: float | None = field(default=None, repr=False)

    def after_eval(self, accuracy: float, now: float) -> bool:
        """Feed one evaluation; True when the convergence window is reached."""
        if accuracy > self._best + self.tol:
            self._best, self._stale = accuracy, 0
            self._window_start = now
            return False
        self._stale += 1
        if self.convergence_window and self._stale >= self.convergence_window:
            # Convergence time = start of the stagnant window (docs/paper-notes.md §2.4).
            self.converged_at = now if self._window_start is None else self._window_start
            return True
        return False


def _of(record: Record, *keys: str) -> list[Any]:
    return [record.fields.get(k) for k in keys]


class LoopBase:
    """Decision execution, evaluation and bookkeeping common to both loops.

    Parameters
    ----------
    policy : Policy
        The scheme's decision logic.
    transport : Transport
        Where jobs go.
    model_size : int
        Number of elements of the flat model (updates of another size are
        rejected).
    evaluator : callable or None
        ``weights -> (loss, accuracy)`` on the central test set.
    stop : StopRule
        When to end.
    eval_every : int (default: 1)
        Evaluate every E global updates.
    events : EventLog or None
        Telemetry sink (a fresh one if None).
    progress : bool (default: True)
        Log a line per evaluation.
    job_timeout : float (default: 600)
        Wall clock: real seconds before an unanswered job counts as failed.
        Virtual clock: real seconds the loop may wait without any reply before
        the run stops (a slow reply never becomes a virtual failure).
    admission : Admission or None (default: None)
        The update admission gate (:mod:`fl_r2sp.fl.server.admission`); None = one
        with ``RunConfig``'s default knobs and no known partition sizes.
    """

    clock_name = "base"
    #: The loop's clock (each loop's constructor sets its virtual or wall clock).
    clock: Clock

    def __init__(
        self,
        policy: Policy,
        transport: Transport,
        model_size: int,
        evaluator: Evaluator | None,
        stop: StopRule,
        eval_every: int = 1,
        events: EventLog | None = None,
        progress: bool = True,
        job_timeout: float = 600.0,
        admission: Admission | None = None,
    ) -> None:
        self.policy = policy
        self.transport = transport
        self.model_size = model_size
        self.evaluator = evaluator
        self.stop = stop
        self.eval_every = max(1, eval_every)
        self.events = events if events is not None else EventLog()
        self.progress = progress
        self.job_timeout = job_timeout
        self.history: list[dict[str, float]] = []
        self.stopped: str | None = None
        self.job_counter: dict[int, int] = {}
        self.replies: list[tuple[int, int]] = []  # (cid, job) of every reply received
        self.last_update_at = 0.0  # clock time of the last global update (or of the start)
        self.longest_gap = 0.0  # longest time between two global updates so far
        self._wall0 = time.perf_counter()
        #: Called as ``(version, time, weights)`` after each evaluation point is recorded
        #: (the Flower strategies' federated evaluation); None = nothing more.
        self.on_evaluate: Callable[[int, float, np.ndarray], None] | None = None
        #: Saves the loop's state every k updates (fl_r2sp.fl.server.checkpoint); set by the runner.
        self.checkpointer: StateSaver | None = None
        self.admission = (
            admission
            if admission is not None
            else Admission(AdmissionParams.from_config(RunConfig()), model_size)
        )
        self._verdicts: dict[tuple[int, int], Verdict] = {}  # (cid, job) -> why not admitted

    def checkpoint_if_due(self) -> None:
        """Save the state if a checkpoint is due; call it only between two events."""
        if self.checkpointer is not None:
            self.checkpointer.maybe_save(self)

    # -- decisions -------------------------------------------------------------
    def execute(self, now: float, decisions: Sequence[Decision]) -> None:
        """Carry out ``decisions`` in order at time ``now``."""
        for d in decisions:
            if isinstance(d, Send):
                for cid in d.cids:
                    self.dispatch(now, cid, d.weights, d.tag)
            elif isinstance(d, Timer):
                self.set_timer(max(d.at, now), d.key)
            elif isinstance(d, ModelUpdated):
                self.model_updated(now, d)
            elif isinstance(d, Record):
                self.events.record(now, d.kind, d.fields)
                if d.kind == "group_empty":  # reported, not silent: the order skips it now
                    log.warning("group %s has no active member left (%s)", *_of(d, "group", "why"))
                elif d.kind == "group_pass":  # no model change: say why the version stands
                    log.warning(
                        "group %s passed its turn: every answer was rejected", d.fields["group"]
                    )
                elif d.kind == "client_rejoin" and d.fields.get("revived"):
                    log.warning("client %s taken back (group %s)", *_of(d, "cid", "group"))
            elif isinstance(d, Stop):
                self.finish(f"policy stopped: {d.reason}")

    def next_job(self, cid: int, weights: np.ndarray, tag: int) -> Job:
        """A new :class:`Job` for ``cid`` with the next per-client index."""
        index = self.job_counter.get(cid, 0)
        self.job_counter[cid] = index + 1
        return Job(cid=cid, index=index, tag=tag, weights=weights)

    def run(self, weights: np.ndarray, clients: list[int]) -> np.ndarray:
        """Start the policy on ``clients``; return the final weights (implemented by each loop)."""
        raise NotImplementedError

    def dispatch(self, now: float, cid: int, weights: np.ndarray, tag: int) -> None:
        """Start a job for ``cid`` (implemented by each loop)."""
        raise NotImplementedError

    def set_timer(self, at: float, key: Hashable) -> None:
        """Arrange ``policy.on_timer(at, key)`` (implemented by each loop)."""
        raise NotImplementedError

    def finish(self, reason: str) -> None:
        """End the run (first reason wins)."""
        if self.stopped is None:
            self.stopped = reason
            log.info("stopping: %s", reason)

    # -- replies ---------------------------------------------------------------
    def check_reply(self, reply: Reply) -> str | None:
        """Why ``reply`` must not be aggregated (error, bad weights or count), or None.

        The stateless half of admission (:meth:`Admission.check`), on receipt.
        """
        return self._note(reply.cid, reply.index, self.admission.check(reply))

    def admit_update(self, job: Job, reply: Reply) -> str | None:
        """Why the update must not reach the policy (its delta norm), or None (accepted).

        The stateful half of admission (:meth:`Admission.check_norm`): call it
        in the order updates reach the policy.
        """
        assert reply.weights is not None
        verdict = self.admission.check_norm(reply.weights, job.weights)
        if verdict is not None:
            log.warning("client %d job %d rejected: %s", job.cid, job.index, verdict.message)
        return self._note(job.cid, job.index, verdict)

    def _note(self, cid: int, index: int, verdict: Verdict | None) -> str | None:
        if verdict is None:
            return None
        self._verdicts[(cid, index)] = verdict
        return verdict.message

    def settle_failure(
        self, cid: int, index: int, message: str, reason: str = "offline"
    ) -> Verdict:
        """File a job that ends without an admitted update in the ledger, once; its verdict.

        ``reason`` is the ledger reason when no admission verdict was noted for
        the job (the loop failed it itself: the client went offline).
        """
        verdict = self._verdicts.pop((cid, index), None) or Verdict(reason, message)
        self.admission.ledger.count(verdict)
        return verdict

    def fail_job(self, now: float, job: Job, message: str) -> None:
        """File ``job`` as brought no admitted update and tell the policy.

        An update that arrived and failed admission is an answer
        (``policy.on_rejected``: FL-R²SP counts it toward the group's threshold,
        ``docs/architecture.md`` §6); anything else is a failed job (``on_failure``).
        """
        verdict = self.settle_failure(job.cid, job.index, message)
        handler = self.policy.on_rejected if verdict.rejected else self.policy.on_failure
        self.execute(now, handler(now, job.cid, job.tag, message))

    def settle_in_flight(self) -> int:
        """File the jobs still out at the stop as in flight (``in_flight`` column and ledger).

        Call once, after the loop stopped: every job row then has an outcome (an update, a
        failure, or in flight), and the ledger counts each row once; returns how many.
        """
        rows = [
            r
            for r in self.events.jobs
            if "push_end" not in r and not r.get("failed") and not r.get("in_flight")
        ]
        for row in rows:
            row["in_flight"] = True
        self.admission.ledger.in_flight += len(rows)
        return len(rows)

    # -- evaluation and stopping ----------------------------------------------
    def model_updated(self, now: float, d: ModelUpdated) -> None:
        """Evaluate every ``eval_every`` versions and apply the stop rules."""
        self.longest_gap = max(self.longest_gap, now - self.last_update_at)
        self.last_update_at = now
        final = self.stop.max_updates and d.version >= self.stop.max_updates
        if d.version % self.eval_every == 0 or final:
            self.evaluate(now, d.version, d.weights)
        if final:
            self.finish(f"reached max-updates={self.stop.max_updates}")

    def evaluate(self, now: float, version: int, weights: np.ndarray) -> None:
        """Central evaluation of ``weights``; logs progress, checks convergence."""
        if self.history and self.history[-1]["version"] == version:
            return  # already scored (the final update of a run that ends on a schedule)
        row: dict[str, float] = {"version": version, "time": now}
        ev = self.evaluator
        if ev is not None:
            loss, acc = (
                ev.score(version, weights) if isinstance(ev, VersionedEvaluator) else ev(weights)
            )
            row.update(loss=loss, accuracy=acc)
        row["wall"] = time.perf_counter() - self._wall0
        self.history.append(row)
        self.events.record(now, "eval", row)
        if self.on_evaluate is not None:
            self.on_evaluate(version, now, weights)
        if self.progress:
            acc_s = (
                f" acc={row['accuracy']:.4f} loss={row['loss']:.4f}" if "accuracy" in row else ""
            )
            limit = f"/{self.stop.max_updates}" if self.stop.max_updates else ""
            log.info(
                "[%s] update %d%s  %s t=%.2fs%s  (wall %.1fs)",
                self.policy.name,
                version,
                limit,
                self.clock_name,
                now,
                acc_s,
                row["wall"],
            )
        if "accuracy" in row and self.stop.after_eval(row["accuracy"], now):
            self.finish(f"converged: accuracy stagnant for {self.stop.convergence_window} evals")

    def evaluate_final(self, now: float) -> None:
        """Evaluate the final model if the last evaluation was of an older version.

        Runs stopped by the time budget, convergence or the policy would
        otherwise report the accuracy of an earlier model.
        """
        if not self.history or self.history[-1]["version"] != self.policy.version:
            self.evaluate(now, self.policy.version, self.policy.weights)

    def time_exceeded(self, now: float) -> bool:
        """True (and stops) when the time budget is spent."""
        if self.stop.time_budget and now > self.stop.time_budget:
            self.finish(f"time budget {self.stop.time_budget:g}s spent")
            return True
        return False

    def summary(self) -> dict[str, Any]:
        """Figures every run reports (the events add push/pull/round times)."""
        out: dict[str, Any] = {"stopped": self.stopped, "clock": self.clock_name}
        out["global_updates"] = self.policy.version
        # The gap still open at the end counts too (a run that stalled before its stop).
        out["longest_update_gap"] = max(self.longest_gap, self.clock.now() - self.last_update_at)
        out["replies_received"] = len(self.replies)
        if self.history:
            last = self.history[-1]
            out.update(final_time=last["time"], final_version=last["version"])
            if "accuracy" in last:
                out["final_accuracy"] = last["accuracy"]
                out["final_loss"] = last["loss"]
                out["best_accuracy"] = max(h["accuracy"] for h in self.history)
        out["converged_at"] = self.stop.converged_at
        out.update(self.admission.ledger.summary())
        out["wall_seconds"] = time.perf_counter() - self._wall0
        out.update({f"policy_{k}": v for k, v in self.policy.summary().items()})
        return out

"""Update admission and run health: what a reply must pass before any policy sees it.

One gate for every scheme and both loops (``docs/architecture.md`` §9). Two steps:

1. :meth:`Admission.check`, on receipt, needs no state: the reply is no
   error; its weights are a flat float32 vector of the model's size, all
   finite; its ``num-examples`` is an integer in [1, the partition size the
   server knows] (the server partitions the same data with the same seed; in
   timing-only runs, which load no data, only >= 1 is checked).
2. :meth:`Admission.check_norm`, when the update would reach the policy (in
   the virtual loop at its push end, so in virtual-time order and
   deterministic): the norm of its delta from the model the client started
   from must not exceed ``k x`` the median of the last ``window`` accepted
   norms. Until ``warmup`` updates were accepted there is no median yet; the
   bound is then ``k x`` the norm of the start model (a client may not move
   the model by more than k times its size; none when that norm is 0). A
   1e30 update or one scaled x1000 fails either bound; a sign flip does not
   (its norm is honest): that is the robust aggregators' and the cosine
   filter's job.

A rejected update reaches the policy as ``on_rejected`` (FL-R²SP and BSP:
an answer excluded from the mean; other schemes: like an error reply). Over
Flower, arrays that do not fit the model come as an error reply starting with
:data:`MISFIT_PREFIX`; they are filed as rejected (``shape`` or ``dtype``).
Every job ends in exactly one ledger entry (:class:`Ledger`): accepted,
rejected (by reason) or dropped (error reply, timeout, offline).

:func:`run_problem` says why a finished run must count as failed: a
non-finite final model, or more than ``max-lost-share`` of its clients
dropped; :class:`RunFailed` carries that reason and the run's output.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.protocol import Reply

#: Ledger reasons of updates that arrived and failed admission.
REJECT_REASONS = (
    "no-weights",
    "shape",
    "dtype",
    "non-finite",
    "num-examples",
    "norm",
    "malformed",
)
#: Ledger reasons of jobs that brought no update.
DROP_REASONS = ("client-error", "timeout", "offline")
#: Start of the error text of a job the loop gave up waiting for (``LoopBase._timed_out``).
TIMEOUT_PREFIX = "no reply within job-timeout"
#: Start of the error text of a job whose node left the SuperLink's online set (or had none).
OFFLINE_PREFIX = "node offline"
#: Start of the error text of a reply whose arrays do not fit the model (Flower transport): the
#: arrays cannot be flattened into the model's vector, so the transport rejects them itself.
MISFIT_PREFIX = "rejected update"
#: Start of the error text of a reply that lacks required content (Flower transport: no
#: ``arrays`` record, no ``metrics`` record or no ``num-examples`` in it); the rest names it.
MALFORMED_PREFIX = "malformed reply"


@dataclass(frozen=True)
class Verdict:
    """Why one reply is not admitted.

    Attributes
    ----------
    reason : str
        Ledger key, one of :data:`REJECT_REASONS` or :data:`DROP_REASONS`.
    message : str
        What was wrong, for the log and the job row.
    """

    reason: str
    message: str

    @property
    def rejected(self) -> bool:
        """True for an update that arrived and failed admission (else the job was dropped)."""
        return self.reason in REJECT_REASONS


@dataclass(frozen=True)
class AdmissionParams:
    """The admission knobs (defaults and documentation: :class:`~fl_r2sp.fl.config.RunConfig`).

    Attributes
    ----------
    norm_factor : float
        k >= 0 (``admission-norm-factor``; 0 = no norm check).
    warmup : int
        Accepted updates before the median bound applies (``admission-warmup``).
    window : int
        Recent accepted norms in the median (``admission-window``, >= 1).
    partition_sizes : mapping of int to int, or None
        Partition id -> training examples the server knows; None = unknown.
    """

    norm_factor: float
    warmup: int
    window: int
    partition_sizes: Mapping[int, int] | None = None

    @classmethod
    def from_config(
        cls, cfg: RunConfig, partition_sizes: Mapping[int, int] | None = None
    ) -> AdmissionParams:
        """The knobs of ``cfg`` with the partition sizes the server computed."""
        return cls(
            cfg.admission_norm_factor, cfg.admission_warmup, cfg.admission_window, partition_sizes
        )


@dataclass
class Ledger:
    """What became of every job: accepted, rejected by reason, dropped by reason, in flight.

    ``in_flight`` counts the jobs still out when the run stopped (no answer, no verdict), so
    that every job row of the run is in the ledger once.
    """

    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0

    def count(self, verdict: Verdict) -> None:
        """File one job that brought no admitted update."""
        (self.rejected if verdict.rejected else self.dropped)[verdict.reason] += 1

    def summary(self) -> dict[str, Any]:
        """``updates_accepted``, ``updates_rejected`` / ``jobs_dropped`` (reason -> count),
        ``jobs_in_flight``."""
        return {
            "updates_accepted": self.accepted,
            "updates_rejected": dict(sorted(self.rejected.items())),
            "jobs_dropped": dict(sorted(self.dropped.items())),
            "jobs_in_flight": self.in_flight,
        }


class Admission:
    """The admission gate of one run (module docstring).

    Parameters
    ----------
    params : AdmissionParams
        Knobs and partition sizes.
    model_size : int
        Elements of the flat model.
    dtype : numpy float type (default: np.float32)
        The flat model's dtype; a reply of another dtype is rejected (``dtype``).
    """

    #: The flat model's dtype by name; float32 (every model of the project, and every
    #: checkpoint written before float64 models) is the class default, so the state of a
    #: float32 run is unchanged.
    dtype_name: str = "float32"

    def __init__(
        self, params: AdmissionParams, model_size: int, dtype: type[np.floating] = np.float32
    ) -> None:
        self.params = params
        self.model_size = int(model_size)
        if np.dtype(dtype) != np.float32:  # kept by name: checkpoints store plain values
            self.dtype_name = np.dtype(dtype).name
        self.ledger = Ledger()
        self._norms: deque[float] = deque(maxlen=max(1, params.window))

    def check(self, reply: Reply) -> Verdict | None:
        """Stateless checks of a reply on receipt; None if it may go on."""
        if reply.error is not None:
            return Verdict(_error_reason(reply.error), reply.error)
        w = reply.weights
        if w is None:
            return Verdict("no-weights", "reply carries no weights")
        if not isinstance(w, np.ndarray) or w.ndim != 1 or w.size != self.model_size:
            return Verdict("shape", f"wrong shape {np.shape(w)}, expected ({self.model_size},)")
        if w.dtype.name != self.dtype_name:
            expected = self.dtype_name
            return Verdict("dtype", f"wrong dtype {w.dtype}, expected {expected} (the model's)")
        if not np.all(np.isfinite(w)):
            return Verdict("non-finite", "non-finite values (NaN or inf) in the update")
        return self._check_count(reply.cid, reply.num_examples)

    def _check_count(self, cid: int, n: Any) -> Verdict | None:
        integral = isinstance(n, (int, np.integer)) and not isinstance(n, bool)
        if not integral:
            return Verdict("num-examples", f"num-examples={n!r} is not an integer")
        sizes = self.params.partition_sizes
        top = None if sizes is None else sizes.get(cid)
        if n < 1 or (top is not None and n > top):
            upper = "" if top is None else f", {top}]: the partition size the server knows"
            return Verdict("num-examples", f"num-examples={int(n)} outside [1{upper or ', inf)'}")
        return None

    def bound(self, start: np.ndarray) -> float | None:
        """The current delta-norm bound for an update that started from ``start`` (None = none)."""
        k = self.params.norm_factor
        if k <= 0:
            return None
        if len(self._norms) >= max(1, self.params.warmup):
            return k * float(np.median(np.fromiter(self._norms, dtype=np.float64)))
        size = _norm(np.asarray(start, dtype=np.float64))
        return k * size if size > 0 else None

    def check_norm(self, weights: np.ndarray, start: np.ndarray) -> Verdict | None:
        """Bound the delta norm; on success count the update accepted and remember its norm.

        Call it in the order updates reach the policy: the window is state.
        """
        s = np.asarray(start, dtype=np.float64)
        norm = _norm(np.asarray(weights, dtype=np.float64) - s)
        if not math.isfinite(norm):
            return Verdict("non-finite", "delta norm overflows float64")
        bound = self.bound(s)
        if bound is not None and norm > bound:
            base = (
                "median of recent accepted norms"
                if len(self._norms) >= max(1, self.params.warmup)
                else "start-model norm"
            )
            return Verdict(
                "norm",
                f"delta norm {norm:.4g} > {bound:.4g} = {self.params.norm_factor:g} x {base}",
            )
        self._norms.append(norm)
        self.ledger.accepted += 1
        return None


def _error_reason(error: str) -> str:
    """Ledger reason of an error reply."""
    if error.startswith(MISFIT_PREFIX):
        return "dtype" if "dtype" in error else "shape"
    if error.startswith(MALFORMED_PREFIX):
        return "malformed"
    if error.startswith(TIMEOUT_PREFIX):
        return "timeout"
    return "offline" if error.startswith(OFFLINE_PREFIX) else "client-error"


def _norm(vector: np.ndarray) -> float:
    # einsum, not BLAS: the result must not depend on the thread count (§8).
    return math.sqrt(float(np.einsum("i,i->", vector, vector)))


class RunFailed(RuntimeError):
    """A run that finished but must not count as a success (exit status != 0).

    Attributes
    ----------
    reason : str
        What :func:`run_problem` found.
    output : Any
        The run's :class:`~fl_r2sp.fl.server.run_output.RunOutput` (its directory is written).
    """

    def __init__(self, reason: str, output: Any = None) -> None:
        where = getattr(output, "run_dir", None)
        super().__init__(f"run failed: {reason}" + (f" (run directory: {where})" if where else ""))
        self.reason = reason
        self.output = output


def run_problem(weights: np.ndarray, lost: int, total: int, max_lost_share: float) -> str | None:
    """Why a finished run failed, or None.

    Parameters
    ----------
    weights : np.ndarray
        Final global model.
    lost : int
        Clients the policy dropped after repeated failures or rejections
        (blacklisted clients are the filter's choice, not lost).
    total : int
        Clients the run started with.
    max_lost_share : float
        Largest share of ``total`` that may be lost.
    """
    if not np.all(np.isfinite(weights)):
        bad = int(np.size(weights) - np.count_nonzero(np.isfinite(weights)))
        return f"the final model has {bad} non-finite values"
    if total > 0 and lost / total > max_lost_share:
        return (
            f"lost {lost} of {total} clients ({lost / total:.0%}) to repeated failures or "
            f"rejected updates, more than max-lost-share={max_lost_share:g}"
        )
    return None


def progress_problem(summary: dict[str, Any], max_rejected_share: float) -> str | None:
    """Why a finished run made too little progress, or None.

    Parameters
    ----------
    summary : dict
        The run's summary: ``global_updates``, the ledger (``updates_accepted``,
        ``updates_rejected``, ``jobs_dropped``) and the wall loop's ``no_progress``.
    max_rejected_share : float
        Largest share of the finished jobs (accepted + rejected + dropped; jobs in flight
        at the stop are not finished) that may bring no accepted update.
    """
    if summary.get("no_progress"):
        return str(summary["no_progress"])
    if not summary.get("global_updates"):
        return f"made no global update (stopped: {summary.get('stopped')})"
    unaccepted = sum(summary["updates_rejected"].values()) + sum(summary["jobs_dropped"].values())
    finished = summary["updates_accepted"] + unaccepted
    if finished and unaccepted / finished > max_rejected_share:
        return (
            f"{unaccepted} of {finished} finished jobs ({unaccepted / finished:.0%}) brought no "
            f"accepted update (rejected or dropped), more than "
            f"max-rejected-share={max_rejected_share:g}"
        )
    return None

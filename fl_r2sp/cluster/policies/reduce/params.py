"""Knobs of the all-reduce-family controllers (all reduce, partial reduce, selective reduce).

Defaults and where they come from (``docs/paper-notes.md`` §5):

* ``p_fraction`` = 0.3: the selective-reduce paper's p = 0.3n. The rule is
  p = max(2, round(0.3·n)), at most n: a group of one never synchronises anyone, so the floor
  is 2 (with 4 workers round(1.2) = 1 would turn partial reduce into local SGD).
* ``eta`` η = 0.3 and ``theta`` θ = 1: the paper's defaults for BAG and BPAWR.
* ``delta_t`` Δt = 0.1 s: **ours**. The paper gives no value; 0.1 s is about a third of the
  mean compute round of the synthetic traces (``fl_r2sp.cluster.sim.reduce.workload``), fixed
  before any result was seen.
* ``full_sync_every`` c = None: no periodic full all-reduce (the paper gives no value).
* ``hazard`` = "paper": the probability that a worker ``t`` seconds into its round is ready
  within Δt is ``F(t + Δt)`` as Algorithm 2 uses it; "conditional" is the correct conditional
  ``(F(t + Δt) − F(t)) / (1 − F(t))``.
* ``reading`` = "consistent": our consistent reading of Algorithms 1–3 (``docs/paper-notes.md``
  §5.4); "literal" is the pseudo-code as printed, with a stall guard (see :mod:`.selective`).
* ``weights`` = "iterations": a member's weight in the weighted all-reduce is proportional to
  its iteration count (partial reduce's staleness compensation, our reading of Miao et al.);
  "uniform" gives every member 1/m.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Scheme names of :func:`fl_r2sp.cluster.policies.reduce.make_reduce_controller`.
REDUCE_SCHEMES: tuple[str, ...] = ("allreduce", "partial", "selective")
HAZARDS: tuple[str, ...] = ("paper", "conditional")
READINGS: tuple[str, ...] = ("consistent", "literal")
WEIGHT_RULES: tuple[str, ...] = ("iterations", "uniform")


@dataclass(frozen=True)
class ReduceParams:
    """Which all-reduce-family scheme, and its knobs.

    Parameters
    ----------
    scheme : str
        One of :data:`REDUCE_SCHEMES`.
    p_fraction : float, default 0.3
        Minimum group size as a fraction of n, in (0, 1]; p = max(2, round(p_fraction · n)),
        at most n.
    p : int or None, default None
        Explicit minimum group size (>= 1); overrides ``p_fraction`` when given.
    eta : float, default 0.3
        BAG tolerance η in [0, 1): a group admits workers with bandwidth >= (1 − η) · threshold.
    theta : float, default 1.0
        BPAWR threshold θ >= 0: wait and replace only when that saves more than θ·Δt
        (``inf``: never wait, i.e. BAG only).
    delta_t : float, default 0.1
        BPAWR slot Δt in seconds (> 0): the prediction horizon and the re-evaluation period.
    full_sync_every : int or None, default None
        c >= 1: a full weighted all-reduce of every live worker every c syncs (None: never).
    hazard : str, default "paper"
        One of :data:`HAZARDS` (see the module docstring).
    reading : str, default "consistent"
        One of :data:`READINGS` (see the module docstring).
    weights : str, default "iterations"
        One of :data:`WEIGHT_RULES`.
    min_samples : int, default 20
        Cold start: compute-time samples needed before BPAWR predicts anyone (>= 1).
    """

    scheme: str
    p_fraction: float = 0.3
    p: int | None = None
    eta: float = 0.3
    theta: float = 1.0
    delta_t: float = 0.1
    full_sync_every: int | None = None
    hazard: str = "paper"
    reading: str = "consistent"
    weights: str = "iterations"
    min_samples: int = 20

    def validate(self) -> ReduceParams:
        """Check every knob; return ``self`` so calls chain.

        Raises
        ------
        ValueError
            Naming the bad knob, its value and what is allowed.
        """
        _choice("scheme", self.scheme, REDUCE_SCHEMES)
        _choice("hazard", self.hazard, HAZARDS)
        _choice("reading", self.reading, READINGS)
        _choice("weights", self.weights, WEIGHT_RULES)
        if not (_real(self.p_fraction) and 0.0 < self.p_fraction <= 1.0):
            raise ValueError(f"p_fraction must lie in (0, 1], got {self.p_fraction!r}")
        if self.p is not None:
            _check_int("p", self.p, 1)
        if not (_real(self.eta) and 0.0 <= self.eta < 1.0):
            raise ValueError(f"eta must lie in [0, 1), got {self.eta!r}")
        if not (_real(self.theta) and self.theta >= 0.0):
            raise ValueError(f"theta must be a number >= 0 (inf: never wait), got {self.theta!r}")
        if not (_real(self.delta_t) and self.delta_t > 0.0):
            raise ValueError(f"delta_t must be > 0 seconds, got {self.delta_t!r}")
        if self.full_sync_every is not None:
            _check_int("full_sync_every", self.full_sync_every, 1)
        _check_int("min_samples", self.min_samples, 1)
        return self

    def group_min(self, num_workers: int) -> int:
        """The minimum group size p for ``num_workers`` workers: the explicit ``p``, else
        max(2, round(p_fraction · n)); never above n (:meth:`check_workers` refuses an explicit
        p above n in a run)."""
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        p = self.p if self.p is not None else max(2, round(self.p_fraction * num_workers))
        return min(p, num_workers)

    def check_workers(self, num_workers: int) -> list[str]:
        """Refuse the group sizes that turn this scheme into another on ``num_workers``
        workers; return warnings for those a user may mean.

        Partial and selective reduce need 2 <= p <= n: p = 1 never synchronises (local SGD),
        p > n cannot form a group (it used to be clamped to n silently). p = n is allowed with a
        warning: every group waits for all workers, an all-reduce with staleness weights, which
        a comparison may want. Selective reduce's ``full_sync_every`` = 1 makes every sync a
        full all-reduce and is refused.

        Raises
        ------
        ValueError
            Naming the setting and the scheme it would become.
        """
        if self.scheme == "allreduce":
            return []
        n = num_workers
        if self.p is not None and self.p > n:
            raise ValueError(f"--group-min {self.p} exceeds the {n} workers: {self.scheme} reduce "
                             "would wait for a group that can never form")  # fmt: skip
        p = self.group_min(n)
        if p < 2:
            raise ValueError(f"{self.scheme} reduce with p = {p} (n = {n}) never "
                             "synchronises: every worker would train alone; use p >= 2 and >= 2 "
                             "workers")  # fmt: skip
        if self.full_sync_every == 1:
            raise ValueError("--full-sync-every 1 makes every selective sync a full all-reduce; "
                             "use --scheme allreduce for that")  # fmt: skip
        if p == n:
            return [f"{self.scheme} reduce with p = n = {n}: every group waits for all workers "
                    "(an all-reduce with staleness weights)"]  # fmt: skip
        return []


def _real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")

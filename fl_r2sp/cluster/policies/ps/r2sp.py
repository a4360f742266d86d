"""R²SP coordinator (Algorithm 1 of the paper): round-robin permissions spaced r·T/N apart.

A worker pushes iteration ``k``, sends Request-to-Proceed, and starts ``k + 1`` (pulls) only on
Permission-to-Proceed. The coordinator:

* grants in a **fixed round-robin order** over the live workers (0, 1, ..., N-1, 0, ...): a
  worker whose turn has not come waits even if it asked first; a lost worker is skipped;
* spaces **consecutive permissions >= r·T/N apart** (``r`` = ``worker_gap_factor``, ``N`` = live
  workers). A request that is due later is held and released by :meth:`on_timer` at
  :meth:`next_deadline`; the gap is re-evaluated with the current T then;
* estimates **T** with per-worker EMAs (weight ``ema_weight``; the first observation seeds an
  EMA) and takes the **maximum over live workers**, so that on a heterogeneous cluster T follows
  the slowest worker. Two candidate measures are kept and logged at every permission:
  ``T_active``, the EMA of compute + communication (blocking excluded; the paper's definition
  and the default), and ``T_cycle``, the EMA of the time between consecutive grants to the same
  worker (which includes blocking: with r = 1 it can only ratchet up). ``t_measure`` picks the
  one that sets the gap;
* **seeding T** (``t_seed``; the paper does not say how T starts): with "probe" (the default)
  only the first worker in the order starts iteration 0; the others wait for its report, whose
  uncontended active time seeds T, and are then granted round-robin at the usual gap, so that
  every worker's own EMA is seeded by an iteration run in the staggered regime, not by a
  start in which all N workers contend for the PS at once (that seed was 4x too high on a
  loaded machine, and with weight 0.1 it takes tens of iterations to decay). It costs one
  uncontended iteration of the first worker at the start. If the probing worker is lost before
  it reports, the others are granted with gap 0 until an estimate exists. With "start" every
  worker starts iteration 0 at once (BSP's first iteration) and the first reports seed T;
  while no estimate exists the gap is 0;
* **batch-size tuning** (optional, :mod:`fl_r2sp.cluster.policies.ps.tuning`): the tuned size is
  piggybacked on each permission;
* **push order** (``push_order``): "arrival" (the default) applies each push as it arrives, so
  under load a push can be overtaken by the pushes of later permissions and its staleness can
  reach 2(N − 1); "permission" makes the caller apply pushes, and report them to
  :meth:`R2SPPolicy.on_push`, in the order of their permissions, which bounds staleness by
  N − 1 (:mod:`fl_r2sp.cluster.policies.ps.push_order`); the policy then has ``admission`` so
  the runtime's shards hold each push until it is released.

Floating point: a held permission is granted at ``t_last + gap``, nudged up by one ulp where
the sum rounds down, so ``at - t_last >= gap`` holds exactly as computed.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from fl_r2sp.cluster.policies.common.base import ApplyMode, Permission, PushReport
from fl_r2sp.cluster.policies.common.params import PSParams, check_fraction, check_int
from fl_r2sp.cluster.policies.common.trace import TracedPolicy
from fl_r2sp.cluster.policies.ps.push_order import PUSH_ORDERS
from fl_r2sp.cluster.policies.ps.tuning import TUNING_RULES, BatchTuner

#: Which EMA feeds R²SP's period T: active time (compute + comm) or the full grant-to-grant cycle.
T_MEASURES: tuple[str, ...] = ("active", "cycle")
#: How T is seeded: one worker's uncontended first iteration, or every worker starting at once.
T_SEEDS: tuple[str, ...] = ("probe", "start")


class EMA:
    """Exponential moving average; the first observation seeds it.

    Parameters
    ----------
    weight : float
        Weight in (0, 1] of the latest observation: ``v <- (1 - w)·v + w·x``.
    """

    def __init__(self, weight: float) -> None:
        if not 0.0 < weight <= 1.0:
            raise ValueError(f"ema weight must lie in (0, 1], got {weight!r}")
        self.weight = weight
        self.value: float | None = None

    def update(self, x: float) -> float:
        """Fold in ``x`` and return the new value."""
        x = float(x)
        self.value = x if self.value is None else (1.0 - self.weight) * self.value + self.weight * x
        return self.value


class R2SPPolicy(TracedPolicy):
    """Round-robin synchronous parallel coordinator (see the module docstring).

    Parameters
    ----------
    num_workers : int
        N >= 1.
    batch_size : int
        Initial batch size of every worker (>= 1).
    params : R2SPParams
        r, the EMA weight, the tuning rule and the T measure.
    """

    name: ClassVar[str] = "r2sp"
    apply_mode: ClassVar[ApplyMode] = "immediate"

    def __init__(
        self,
        num_workers: int,
        batch_size: int,
        params: R2SPParams,
    ) -> None:
        super().__init__(num_workers, batch_size)
        params.validate()
        self.worker_gap_factor = float(params.worker_gap_factor)
        self.t_measure = params.t_measure
        self.t_seed = params.t_seed
        self.push_order = params.push_order
        self.admission = params.push_order == "permission"  # shards hold pushes for release
        self.probe: int | None = None  # the worker whose first iteration seeds T ("probe")
        ema_weight, tuning = params.ema_weight, params.tuning
        self.order: tuple[int, ...] = tuple(range(num_workers))
        self.turn = 0  # index into order
        self.pending: dict[int, int] = {}  # worker -> iteration it asks to start
        self.t_last = -math.inf  # time of the latest permission
        self.last_grant: dict[int, float] = {}
        self.ema_active = {w: EMA(ema_weight) for w in self.order}
        self.ema_cycle = {w: EMA(ema_weight) for w in self.order}
        self.tuner = (None if tuning == "none"
                      else BatchTuner(tuning, batch_size, params.tuning_warmup))  # fmt: skip

    # -- estimates -------------------------------------------------------------
    def estimate(self, measure: str) -> float:
        """Max over live workers of their EMA of ``measure`` ("active"/"cycle"); 0 if none."""
        emas = self.ema_active if measure == "active" else self.ema_cycle
        values = [v for w in self.live if (v := emas[w].value) is not None]
        return max(values, default=0.0)

    def gap(self) -> float:
        """Current minimum spacing r·T/N between consecutive permissions (0 if none live)."""
        n = len(self.live)
        return self.worker_gap_factor * self.estimate(self.t_measure) / n if n else 0.0

    def due(self) -> float:
        """Earliest time of the next permission: ``t_last + gap`` (exactly >= gap apart)."""
        gap = self.gap()
        t = self.t_last + gap
        if t - self.t_last < gap:
            t = math.nextafter(t, math.inf)
        return t

    def turn_worker(self) -> int | None:
        """The live worker whose turn it is (lost workers are skipped), or None."""
        for _ in range(len(self.order)):
            w = self.order[self.turn]
            if w in self.live:
                return w
            self.turn = (self.turn + 1) % len(self.order)
        return None

    # -- events ----------------------------------------------------------------
    def start(self, now: float) -> list[Permission]:
        """Iteration 0: the probing worker alone ("probe") or every worker ("start") at ``now``."""
        self.t_last = now
        first = self.turn_worker()
        if self.t_seed == "start" or first is None or len(self.live) == 1:
            for w in self.live:
                self.last_grant[w] = now
            return [self.grant(w, 0, now, **self._estimates()) for w in sorted(self.live)]
        self.probe = first
        self.pending.update({w: 0 for w in self.live if w != first})
        self.note("probe", now, worker=first)
        self.pending[first] = 0
        return [self._grant_turn(first, now)]

    def waiting_for_probe(self) -> bool:
        """True while the live probing worker has not reported its first iteration."""
        p = self.probe
        return p is not None and p in self.live and self.ema_active[p].value is None

    def on_push(self, report: PushReport) -> list[Permission]:
        """Fold the report into T (and the tuner); grant whoever is due."""
        if not self.check_report(report):
            return []
        w = report.worker
        self.ema_active[w].update(report.active_s)
        if self.tuner is not None:
            self.tuner.observe(report)
            if self.tuner.ready(self.live):
                sizes = self.tuner.tune(self.live)
                self.note(
                    "tune",
                    report.now,
                    rule=self.tuner.rule,
                    batch_sizes={str(k): v for k, v in sorted(sizes.items())},
                    speed={str(k): v for k, v in sorted(self.tuner.means["speed"].items())},
                    blocking={str(k): v for k, v in sorted(self.tuner.means["blocking"].items())},
                )
        self.pending[w] = report.iteration + 1
        perms = self._advance(report.now)
        if w in self.pending:
            why = (
                "turn"
                if self.turn_worker() != w
                else "probe"
                if self.waiting_for_probe()
                else "gap"
            )
            self.note(
                "hold",
                report.now,
                worker=w,
                iteration=self.pending[w],
                why=why,
                due=self.due() if why == "gap" else None,
            )
        return perms

    def next_deadline(self) -> float | None:
        """When the worker whose turn it is may be granted, if it is waiting; else None."""
        w = self.turn_worker()
        waiting = w is None or w not in self.pending or self.waiting_for_probe()
        return None if waiting else self.due()

    def on_timer(self, now: float) -> list[Permission]:
        """Grant the waiting worker(s) whose time has come."""
        return self._advance(now)

    def on_worker_lost(self, worker: int, now: float) -> list[Permission]:
        """Skip ``worker`` from now on (N shrinks, so does the gap); grant who is due."""
        super().on_worker_lost(worker, now)
        self.pending.pop(worker, None)
        return self._advance(now)

    # -- internals ---------------------------------------------------------------
    def _advance(self, now: float) -> list[Permission]:
        perms: list[Permission] = []
        while (
            not self.waiting_for_probe()
            and (w := self.turn_worker()) is not None
            and w in self.pending
            and now >= self.due()
        ):
            perms.append(self._grant_turn(w, now))
        return perms

    def _grant_turn(self, w: int, now: float) -> Permission:
        extra = self._estimates()  # the estimates that set this gap, before the cycle update
        extra["since_last"] = now - self.t_last
        if w in self.last_grant:
            self.ema_cycle[w].update(now - self.last_grant[w])
        self.last_grant[w] = now
        self.t_last = now
        self.turn = (self.turn + 1) % len(self.order)
        batch = self.batch_size if self.tuner is None else self.tuner.batch_for(w)
        return self.grant(w, self.pending.pop(w), now, batch, **extra)

    def _estimates(self) -> dict[str, Any]:
        t_active, t_cycle = self.estimate("active"), self.estimate("cycle")
        return {
            "T_active": t_active,
            "T_cycle": t_cycle,
            "T": t_active if self.t_measure == "active" else t_cycle,
            "gap": self.gap(),
            "n_live": len(self.live),
        }


class DeprecatedAlias(argparse.Action):
    """Store the value like the flag it renames, and warn on stderr that the name is old."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:  # fmt: skip
        new = "--" + self.dest.replace("_", "-")
        print(f"warning: {option_string} is deprecated; use {new}", file=sys.stderr, flush=True)
        setattr(namespace, self.dest, values)


@dataclass(frozen=True, kw_only=True)
class R2SPParams(PSParams):
    """R²SP's record (defaults: ``docs/paper-notes.md``, cluster part).

    Parameters
    ----------
    scheme : str, default "r2sp"
    worker_gap_factor : float, default 0.8
        r in [0, 1]: consecutive permissions are >= r·T/N apart (the paper's default).
    ema_weight : float, default 0.1
        Weight in (0, 1] of the latest observation in the EMAs of the iteration time (the
        cluster paper gives none; 0.1 is the FL-R²SP paper's).
    tuning : str, default "none"
        Batch-size tuning rule: "none", "idle" (b + v·t_block; reproduces the paper's Table
        III) or "proportional" (b·v/v_slowest; fits its Fig. 5 text).
    tuning_warmup : int, default 5
        Iterations every live worker completes before the batch sizes are tuned (>= 1).
    t_measure : str, default "active"
        Which T estimate sets the gap: "active" (compute + comm, blocking excluded; the paper's
        definition) or "cycle" (grant-to-grant time).
    t_seed : str, default "probe"
        How T is seeded: "probe" (the first worker runs iteration 0 alone and its active time
        seeds T) or "start" (every worker starts at once; the first reports seed T).
    push_order : str, default "arrival"
        When pushes are applied: "arrival" (as they arrive) or "permission" (in permission
        order: a push waits for the pushes of earlier permissions; staleness <= N − 1).
    """

    scheme: str = "r2sp"
    worker_gap_factor: float = 0.8
    ema_weight: float = 0.1
    tuning: str = "none"
    tuning_warmup: int = 5
    t_measure: str = "active"
    t_seed: str = "probe"
    push_order: str = "arrival"

    def check(self) -> None:
        """Raise ValueError naming the first bad knob."""
        check_fraction("worker_gap_factor r", self.worker_gap_factor, low_open=False)
        check_fraction("ema_weight", self.ema_weight, low_open=True)
        check_int("tuning_warmup", self.tuning_warmup, 1)
        if self.tuning not in TUNING_RULES:
            raise ValueError(f"unknown tuning {self.tuning!r}; choose one of {TUNING_RULES}")
        if self.t_measure not in T_MEASURES:
            raise ValueError(f"unknown t_measure {self.t_measure!r}; choose one of {T_MEASURES}")
        if self.t_seed not in T_SEEDS:
            raise ValueError(f"unknown t_seed {self.t_seed!r}; choose one of {T_SEEDS}")
        if self.push_order not in PUSH_ORDERS:
            raise ValueError(f"unknown push_order {self.push_order!r}; choose one of "
                             f"{PUSH_ORDERS}")  # fmt: skip

    def make(self, num_workers: int, batch_size: int) -> R2SPPolicy:
        """An :class:`R2SPPolicy` for ``num_workers`` workers."""
        return R2SPPolicy(num_workers, batch_size, self)

    @classmethod
    def add_flags(cls, group: argparse._ArgumentGroup) -> None:
        """The R²SP flags: ``--worker-gap-factor`` (``--gap-factor`` is its deprecated alias),
        ``--ema-weight``, ``--t-measure``, ``--t-seed``, ``--r2sp-push-order``, ``--tuning*``."""
        d, a = cls(), group.add_argument
        a("--worker-gap-factor", type=float, default=d.worker_gap_factor,
          help=f"R²SP r: permissions >= r·T/N apart [{d.worker_gap_factor}]")  # fmt: skip
        # The federated side's --gap-factor defaults to 1.0; this one to 0.8. The old name
        # stays accepted so existing scripts keep working, with a warning naming the new one.
        a("--gap-factor", type=float, dest="worker_gap_factor", action=DeprecatedAlias,
          help=argparse.SUPPRESS)  # fmt: skip
        a(
            "--ema-weight",
            type=float,
            default=d.ema_weight,
            help=f"R²SP EMA weight [{d.ema_weight}]",
        )
        a("--t-measure", choices=T_MEASURES, default=d.t_measure,
          help=f"R²SP T estimate [{d.t_measure}]")  # fmt: skip
        a("--t-seed", choices=T_SEEDS, default=d.t_seed,
          help=f"R²SP T seeding: one uncontended probe or all at once [{d.t_seed}]")  # fmt: skip
        a("--r2sp-push-order", choices=PUSH_ORDERS, default=d.push_order,
          help="R²SP: apply pushes as they arrive, or in permission order (staleness <= N - 1) "
               f"[{d.push_order}]")  # fmt: skip
        a(
            "--tuning",
            choices=TUNING_RULES,
            default=d.tuning,
            help=f"R²SP batch tuning [{d.tuning}]",
        )
        a("--tuning-warmup", type=int, default=d.tuning_warmup,
          help=f"iterations before tuning [{d.tuning_warmup}]")  # fmt: skip

    @classmethod
    def from_flags(cls, scheme: str, ns: argparse.Namespace) -> Self:
        """The record from the R²SP flags."""
        return cls(
            scheme=scheme,
            worker_gap_factor=ns.worker_gap_factor,
            ema_weight=ns.ema_weight,
            tuning=ns.tuning,
            tuning_warmup=ns.tuning_warmup,
            t_measure=ns.t_measure,
            t_seed=ns.t_seed,
            push_order=ns.r2sp_push_order,
        )

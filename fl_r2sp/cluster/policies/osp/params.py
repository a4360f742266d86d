"""OSP's record: the three variants' knobs (ablations included), each default written once.

``osp`` = ``osp-s`` (standalone parameter servers) and ``osp-c`` (each PS co-located in the
process of worker s: the job has N ranks). ``--osp-budget fixed --osp-fixed-mb 0`` puts every
layer in RS (BSP); ``--osp-no-lgp``, ``--osp-selection random|topk`` and ``--osp-budget fixed``
are the ablations.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import ClassVar, Self

from fl_r2sp.cluster.policies.common.params import PSParams, check_fraction, check_int
from fl_r2sp.cluster.policies.common.trace import TracedPolicy
from fl_r2sp.cluster.policies.osp.budget import BUDGETS, LOSS_FORMS
from fl_r2sp.cluster.policies.osp.coordinator import OSP_POLICIES
from fl_r2sp.cluster.policies.osp.rules import SELECTIONS


@dataclass(frozen=True, kw_only=True)
class OSPParams(PSParams):
    """OSP's knobs.

    Parameters
    ----------
    scheme : str, default "osp"
        "osp" (= "osp-s") or "osp-c".
    selection : str, default "importance"
        "importance" (``Σ|g·P|``, the paper), "random" (a seeded random order each call) or
        "topk" (rank by gradient magnitude ``Σ|g|`` alone: the largest gradients stay in RS).
    lgp : bool, default True
        Apply local updates to the unimportant layers (Eq. 6); False leaves them stale until ICS.
    budget : str, default "scheduled"
        S(G^u): "scheduled" (Algorithm 1 per epoch) or "fixed" (``fixed_mb`` throughout).
    fixed_mb : float, default 0.0
        Fixed S(G^u) in MB (10^6 bytes, >= 0), capped at ``cap`` of the model.
    cap : float, default 0.8
        U_max cap as a fraction of the model size (the paper's 80%), in (0, 1].
    loss_form : str, default "printed"
        Eq. 5 as printed, ``b(1+lr)·T_C/N``, or "divided", ``b·T_C/(N(1+lr))``.
    bandwidth_mb_s : float, default 0.0
        b of Eq. 5 in MB/s (0 = the PS bandwidth cap; with neither, U_max is the cap).
    loss_rate : float, default 0.0
        lr of Eq. 5 (packet loss rate), in [0, 1).
    epoch_iterations : int, default 0
        Iterations per epoch of Algorithm 1's schedule (0 = one pass of the N workers over the
        training set).
    """

    variants: ClassVar[tuple[str, ...]] = tuple(OSP_POLICIES)
    # OSP's worker runs its own iteration loop (RS/ICS, LGP) and never calibrates a cost.
    emulated_compute: ClassVar[bool] = False
    scheme: str = "osp"
    selection: str = "importance"
    lgp: bool = True
    budget: str = "scheduled"
    fixed_mb: float = 0.0
    cap: float = 0.8
    loss_form: str = "printed"
    bandwidth_mb_s: float = 0.0
    loss_rate: float = 0.0
    epoch_iterations: int = 0

    @property
    def colocated(self) -> bool:
        """OSP-C: shard s lives in the process of worker s."""
        return self.scheme == "osp-c"

    def check(self) -> None:
        """Raise ValueError naming the first bad knob."""
        for name, value, allowed in (("osp_selection", self.selection, SELECTIONS),
                                     ("osp_budget", self.budget, BUDGETS),
                                     ("osp_loss_form", self.loss_form, LOSS_FORMS)):  # fmt: skip
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; choose one of {allowed}")
        if not isinstance(self.lgp, bool):
            raise ValueError(f"osp_lgp must be a bool, got {self.lgp!r}")
        for knob, size in (("osp_fixed_mb", self.fixed_mb),
                           ("osp_bandwidth_mb_s", self.bandwidth_mb_s)):  # fmt: skip
            if not (isinstance(size, int | float) and math.isfinite(size) and size >= 0):
                raise ValueError(f"{knob} must be >= 0, got {size!r}")
        check_fraction("osp_cap", self.cap, low_open=True)
        if not (isinstance(self.loss_rate, int | float) and 0 <= self.loss_rate < 1):
            raise ValueError(f"osp_loss_rate must lie in [0, 1), got {self.loss_rate!r}")
        check_int("osp_epoch_iterations", self.epoch_iterations, 0)

    def check_job(self, workers: int, servers: int, momentum: float) -> None:
        """LGP applies ``-lr·g`` locally, so no momentum; OSP-C needs a worker per server.

        Raises
        ------
        ValueError
            If momentum is not 0, or OSP-C has more servers than workers.
        """
        if momentum != 0:
            raise ValueError(f"OSP needs momentum 0 (LGP applies -lr·g locally), got {momentum}")
        if self.colocated and servers > workers:
            raise ValueError(
                f"osp-c co-locates each PS with a worker: servers {servers} > workers {workers}"
            )

    def make(self, num_workers: int, batch_size: int) -> TracedPolicy:
        """The variant's coordinator policy (ASP's decisions, barrier fault handling)."""
        return OSP_POLICIES[self.scheme](num_workers, batch_size)

    @classmethod
    def add_flags(cls, group: argparse._ArgumentGroup) -> None:
        """The ``--osp-*`` flags."""
        d, a = cls(), group.add_argument
        a(
            "--osp-selection",
            choices=SELECTIONS,
            default=d.selection,
            help=f"OSP layer choice for ICS: PGP importance, random, topk [{d.selection}]",
        )
        a("--osp-no-lgp", action="store_true", help="OSP ablation: no local-gradient prediction")
        a("--osp-budget", choices=BUDGETS, default=d.budget,
          help=f"OSP S(G^u): Algorithm 1 per epoch, or --osp-fixed-mb [{d.budget}]")  # fmt: skip
        a("--osp-fixed-mb", type=float, default=d.fixed_mb,
          help=f"OSP fixed S(G^u), MB [{d.fixed_mb:g}]")  # fmt: skip
        a("--osp-cap", type=float, default=d.cap, help=f"OSP U_max cap / model [{d.cap}]")
        a(
            "--osp-loss-form",
            choices=LOSS_FORMS,
            default=d.loss_form,
            help=f"OSP Eq. 5: b(1+lr)T_C/N as printed, or b T_C/(N(1+lr)) [{d.loss_form}]",
        )
        a("--osp-bandwidth", type=float, default=d.bandwidth_mb_s,
          help=f"OSP b of Eq. 5, MB/s (0 = --server-bandwidth) [{d.bandwidth_mb_s:g}]")  # fmt: skip
        a("--osp-loss-rate", type=float, default=d.loss_rate,
          help=f"OSP lr of Eq. 5 [{d.loss_rate:g}]")  # fmt: skip
        a("--osp-epoch-iterations", type=int, default=d.epoch_iterations,
          help="OSP iterations per schedule epoch (0 = one pass over the data) "
               f"[{d.epoch_iterations}]")  # fmt: skip

    @classmethod
    def from_flags(cls, scheme: str, ns: argparse.Namespace) -> Self:
        """The record from the ``--osp-*`` flags."""
        return cls(
            scheme=scheme,
            selection=ns.osp_selection,
            lgp=not ns.osp_no_lgp,
            budget=ns.osp_budget,
            fixed_mb=ns.osp_fixed_mb,
            cap=ns.osp_cap,
            loss_form=ns.osp_loss_form,
            bandwidth_mb_s=ns.osp_bandwidth,
            loss_rate=ns.osp_loss_rate,
            epoch_iterations=ns.osp_epoch_iterations,
        )

"""OSP's command-line flags (``--scheme osp|osp-s|osp-c``), part of the PS family's group.

Each flag sets one ``osp_*`` knob of :class:`~fl_r2sp.cluster.policies.ps.params.SchemeParams`
(defaults there). ``--osp-budget fixed --osp-fixed-mb 0`` puts every layer in RS (BSP);
``--osp-no-lgp``, ``--osp-selection random|topk`` and ``--osp-budget fixed`` are the ablations.
"""

from __future__ import annotations

import argparse
from typing import Any

from fl_r2sp.cluster.policies.osp.rules import BUDGETS, SELECTIONS
from fl_r2sp.cluster.policies.ps.params import SchemeParams


def add_flags(g: argparse._ArgumentGroup) -> None:
    """Add the OSP flags to ``g``."""
    sp = SchemeParams("osp")
    a = g.add_argument
    a("--osp-selection", choices=SELECTIONS, default=sp.osp_selection,
      help="OSP layer choice for ICS: PGP importance, random, topk [importance]")  # fmt: skip
    a("--osp-no-lgp", action="store_true", help="OSP ablation: no local-gradient prediction")
    a("--osp-budget", choices=BUDGETS, default=sp.osp_budget,
      help="OSP S(G^u): Algorithm 1 per epoch, or --osp-fixed-mb [scheduled]")  # fmt: skip
    a("--osp-fixed-mb", type=float, default=sp.osp_fixed_mb, help="OSP fixed S(G^u), MB [0]")
    a("--osp-cap", type=float, default=sp.osp_cap, help=f"OSP U_max cap / model [{sp.osp_cap}]")
    a("--osp-loss-form", choices=("printed", "divided"), default=sp.osp_loss_form,
      help="OSP Eq. 5: b(1+lr)T_C/N as printed, or b T_C/(N(1+lr)) [printed]")  # fmt: skip
    a("--osp-bandwidth", type=float, default=sp.osp_bandwidth_mb_s,
      help="OSP b of Eq. 5, MB/s (0 = --server-bandwidth) [0]")  # fmt: skip
    a("--osp-loss-rate", type=float, default=sp.osp_loss_rate, help="OSP lr of Eq. 5 [0]")
    a("--osp-epoch-iterations", type=int, default=sp.osp_epoch_iterations,
      help="OSP iterations per schedule epoch (0 = one pass over the data) [0]")  # fmt: skip


def scheme_kwargs(ns: argparse.Namespace) -> dict[str, Any]:
    """The ``osp_*`` SchemeParams keywords from parsed flags."""
    return {
        "osp_selection": ns.osp_selection, "osp_lgp": not ns.osp_no_lgp,
        "osp_budget": ns.osp_budget, "osp_fixed_mb": ns.osp_fixed_mb, "osp_cap": ns.osp_cap,
        "osp_loss_form": ns.osp_loss_form, "osp_bandwidth_mb_s": ns.osp_bandwidth,
        "osp_loss_rate": ns.osp_loss_rate, "osp_epoch_iterations": ns.osp_epoch_iterations,
    }  # fmt: skip

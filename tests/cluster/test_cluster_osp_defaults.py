"""SchemeParams' osp_* knobs and OSPParams declare the same defaults (they must not drift)."""

from __future__ import annotations

from fl_r2sp.cluster.policies.osp.rules import OSPParams
from fl_r2sp.cluster.policies.ps.params import SchemeParams


def test_scheme_params_osp_defaults_equal_the_policy_defaults() -> None:
    s, o = SchemeParams(scheme="osp"), OSPParams()
    assert (s.osp_selection, s.osp_lgp, s.osp_budget, s.osp_cap, s.osp_loss_form) == (
        o.selection,
        o.lgp,
        o.budget,
        o.cap_fraction,
        o.loss_form,
    )
    assert s.osp_fixed_mb * 1e6 == o.fixed_budget_bytes  # MB on the command line, bytes inside

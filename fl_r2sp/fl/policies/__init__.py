"""Federated schemes as plain-Python policies (no Flower, torch, clocks or global RNG).

Each scheme's decision logic is a policy class: :class:`~.flr2sp.FLR2SPPolicy`,
:class:`~.bsp.BSPPolicy`, :class:`~.asp.ASPPolicy` / :class:`~.asp.FedAsyncPolicy` and
:class:`~.fedbuff.FedBuffPolicy`. They take frozen parameter records (:mod:`.params`:
``GroupParams``, ``OutlierParams``, ``AsyncParams``), where each knob's default is written once;
:mod:`.registry` lists the schemes once (name -> policy, Flower class, description) and
:mod:`.factory` builds a policy from a run configuration. The outlier rules are objects of
:mod:`.outlier_rules`.

The Flower ``Strategy`` class that runs each policy lives one layer up, in
:mod:`fl_r2sp.fl.flower.strategy`; the public import is ``from fl_r2sp import FLR2SP``.
The names below are served lazily (:mod:`fl_r2sp.lazy`).
"""

from __future__ import annotations

from fl_r2sp.lazy import lazy_exports

#: Public name -> the module that defines it.
EXPORTS: dict[str, str] = {
    "FLR2SPPolicy": "fl_r2sp.fl.policies.flr2sp",
    "BSPPolicy": "fl_r2sp.fl.policies.bsp",
    "ASPPolicy": "fl_r2sp.fl.policies.asp",
    "FedAsyncPolicy": "fl_r2sp.fl.policies.asp",
    "FedBuffPolicy": "fl_r2sp.fl.policies.fedbuff",
    "GroupParams": "fl_r2sp.fl.policies.params",
    "OutlierParams": "fl_r2sp.fl.policies.params",
    "AsyncParams": "fl_r2sp.fl.policies.params",
    "Scheme": "fl_r2sp.fl.policies.registry",
    "SCHEMES": "fl_r2sp.fl.policies.registry",
    "make_policy": "fl_r2sp.fl.policies.factory",
}

__all__ = list(EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)

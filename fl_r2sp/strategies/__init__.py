"""Federated schemes: plain-Python policies, and (re-exported) their Flower classes.

Two things carry a scheme's name, and they live in two places:

* the **policy** (the decision logic, no Flower, torch, clocks or global RNG)
  is a module of this package: :class:`~fl_r2sp.strategies.flr2sp.FLR2SPPolicy`,
  :class:`~fl_r2sp.strategies.bsp.BSPPolicy`,
  :class:`~fl_r2sp.strategies.asp.ASPPolicy` /
  :class:`~fl_r2sp.strategies.asp.FedAsyncPolicy`,
  :class:`~fl_r2sp.strategies.fedbuff.FedBuffPolicy`. They take frozen
  parameter records (:mod:`~fl_r2sp.strategies.params`: ``GroupParams``,
  ``OutlierParams``, ``AsyncParams``), where each scheme knob's default is
  written once; :mod:`~fl_r2sp.strategies.registry` lists the schemes once
  (name -> policy, Flower class, description) and
  :mod:`~fl_r2sp.strategies.factory` builds a policy from a run configuration;
* the **Flower class** (a ``flwr`` ``Strategy`` that runs the policy through
  the server loops) lives in :mod:`fl_r2sp.flower.strategy`: ``FLR2SP``,
  ``BSP``, ``ASP``, ``FedAsync``, ``FedBuff``.

The Flower classes are re-exported here, so the public import is::

    from fl_r2sp.strategies import FLR2SP, BSP, ASP, FedAsync, FedBuff

The re-export is lazy (module ``__getattr__``, PEP 562): importing this
package, or any policy module in it, never imports Flower or
``fl_r2sp.flower``; only asking for one of those names does. That keeps the
dependency one-way at import time (``fl_r2sp.flower`` imports the policies,
not the other way round); ``tests/test_architecture.py`` allows exactly this
edge and checks that it stays lazy.
"""

from __future__ import annotations

from typing import Any

#: Names served from :mod:`fl_r2sp.flower.strategy` on first access.
FLOWER_CLASSES: tuple[str, ...] = (
    "FLR2SP",
    "BSP",
    "ASP",
    "FedAsync",
    "FedBuff",
    "EventDrivenStrategy",
    "strategy_for",
)

__all__ = list(FLOWER_CLASSES)


def __getattr__(name: str) -> Any:
    """Serve the Flower classes lazily (see the module docstring)."""
    if name in FLOWER_CLASSES:
        from fl_r2sp.flower import strategy

        return getattr(strategy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

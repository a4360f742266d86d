"""Deprecated: ``fl_r2sp.strategies`` moved to :mod:`fl_r2sp.fl.policies`.

The old name works for one release (:mod:`fl_r2sp.moved`).
"""

from fl_r2sp.moved import deprecated_module

#: The Flower classes this package re-exported before the move.
_FLOWER = ("FLR2SP", "BSP", "ASP", "FedAsync", "FedBuff", "EventDrivenStrategy", "strategy_for")

__getattr__ = deprecated_module(__name__, dict.fromkeys(_FLOWER, "fl_r2sp.fl.flower.strategy"))

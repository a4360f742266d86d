"""Deprecated: ``fl_r2sp.server`` moved to :mod:`fl_r2sp.fl.server`.

The old name works for one release (:mod:`fl_r2sp.moved`).
"""

from fl_r2sp.moved import deprecated_module

__getattr__ = deprecated_module(__name__)

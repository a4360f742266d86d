"""Deprecated: ``fl_r2sp.clients`` moved to :mod:`fl_r2sp.fl.clients`.

The old name works for one release (:mod:`fl_r2sp.moved`).
"""

from fl_r2sp.moved import deprecated_module

__getattr__ = deprecated_module(__name__)

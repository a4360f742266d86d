"""Deprecated: ``fl_r2sp.config_checks`` moved to :mod:`fl_r2sp.fl.config_checks`.

The old name works for one release (:mod:`fl_r2sp.moved`).
"""

from fl_r2sp.moved import deprecated_module

__getattr__ = deprecated_module(__name__)

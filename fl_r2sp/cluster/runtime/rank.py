"""Deprecated: ``fl_r2sp.cluster.runtime.rank`` moved to :mod:`fl_r2sp.cluster.rank`.

``torchrun ... -m fl_r2sp.cluster.runtime.rank ...`` still runs the rank entry for one release
(with a note on stderr); importing the old name serves the new module's names with a warning
(:mod:`fl_r2sp.moved`).
"""

import runpy
import sys

from fl_r2sp.moved import deprecated_module

if __name__ == "__main__":
    print("fl_r2sp.cluster.runtime.rank moved to fl_r2sp.cluster.rank", file=sys.stderr)
    runpy.run_module("fl_r2sp.cluster.rank", run_name="__main__", alter_sys=True)
else:
    __getattr__ = deprecated_module(__name__)

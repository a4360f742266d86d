"""Old import paths of the federated half, kept working for one release.

The federated half lived at the top of the package (``fl_r2sp.strategies``, ``fl_r2sp.server``,
``fl_r2sp.clients``, ``fl_r2sp.flower``, ``fl_r2sp.config``, ``fl_r2sp.config_checks``,
``fl_r2sp.protocol``) before it got its own folder, :mod:`fl_r2sp.fl`; cluster mode's entry
modules moved from ``fl_r2sp.cluster.runtime`` up to ``fl_r2sp.cluster`` (of those only the
torchrun entry ``rank`` keeps a shim; the others are listed so that code versions see a move,
not a change). Each old federated name is now a shim that calls :func:`deprecated_module`:
importing it warns (``DeprecationWarning``) and
serves every name of the new module; submodules of an old package
(``fl_r2sp.strategies.flr2sp``) resolve through :class:`MovedFinder` to the *same* module
objects as their new names, so classes keep one identity (``isinstance`` and checkpoints see
one ``FLR2SPPolicy``, not two).

:func:`current_name` maps an old dotted module name to its new one without importing or
warning: the checkpoint codec uses it, so a checkpoint written before the move, which names its
classes by their old module paths, still resumes.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType, ModuleType
from typing import Any

__all__ = ["MOVED", "MovedFinder", "current_name", "deprecated_module"]

#: Old module or package name -> its new name (one release of deprecation).
MOVED: Mapping[str, str] = MappingProxyType(
    {
        "fl_r2sp.strategies": "fl_r2sp.fl.policies",
        "fl_r2sp.server": "fl_r2sp.fl.server",
        "fl_r2sp.clients": "fl_r2sp.fl.clients",
        "fl_r2sp.flower": "fl_r2sp.fl.flower",
        "fl_r2sp.config": "fl_r2sp.fl.config",
        "fl_r2sp.config_checks": "fl_r2sp.fl.config_checks",
        "fl_r2sp.protocol": "fl_r2sp.fl.protocol",
        # cluster mode's entry modules, moved above the scheme table they read (only the
        # torchrun entry, rank, keeps a shim; the names of all four map for code versions)
        "fl_r2sp.cluster.runtime.rank": "fl_r2sp.cluster.rank",
        "fl_r2sp.cluster.runtime.cli": "fl_r2sp.cluster.cli",
        "fl_r2sp.cluster.runtime.launcher": "fl_r2sp.cluster.launcher",
        "fl_r2sp.cluster.runtime.local": "fl_r2sp.cluster.local",
    }
)


def current_name(module: str) -> str:
    """The name ``module`` has now: itself unless it is, or lies inside, an entry of
    :data:`MOVED` (``fl_r2sp.strategies.flr2sp`` -> ``fl_r2sp.fl.policies.flr2sp``)."""
    for old, new in MOVED.items():
        if module == old or module.startswith(old + "."):
            return new + module[len(old) :]
    return module


class _SameModule(importlib.abc.Loader):
    """Loads an old name as the already imported module of its new name."""

    def __init__(self, new: str) -> None:
        self._new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._new)
        self._spec = module.__spec__  # the import system overwrites it: put it back below
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds a submodule of a moved package under its new name (first on ``sys.meta_path``,
    so the old package's borrowed ``__path__`` never loads a second copy of a file)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = current_name(fullname)
        if new == fullname or fullname in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _SameModule(new))


def deprecated_module(old: str, extra: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the shim ``old`` (an entry of :data:`MOVED`), with a warning.

    Called by the shim while it is being imported: it warns once (``DeprecationWarning``),
    puts :class:`MovedFinder` first on ``sys.meta_path`` (so ``old.sub`` imports are the new
    modules themselves) and returns a ``__getattr__`` that serves every name of the new module.

    Parameters
    ----------
    old : str
        The shim's ``__name__``.
    extra : mapping of str to str or None (default: None)
        Names the old module served that its new module does not: name -> defining module
        (``fl_r2sp.strategies`` re-exported the Flower classes).
    """
    new = MOVED[old]
    warnings.warn(
        f"{old} moved to {new}; the old name works for one release",
        DeprecationWarning,
        stacklevel=3,
    )
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
    table = dict(extra or {})

    def __getattr__(name: str) -> Any:
        module = importlib.import_module(table.get(name, new))
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None

    return __getattr__

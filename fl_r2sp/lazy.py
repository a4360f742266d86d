"""Lazy public exports (PEP 562): one mechanism for every package with a public surface.

A package lists its public names in a table ``name -> defining module`` and gets a module
``__getattr__`` and ``__dir__`` from :func:`lazy_exports`. A name's module is imported on first
access only, so ``import fl_r2sp`` (and ``python -m fl_r2sp.cluster --help``) pay for neither
torch nor Flower. ``tests/test_architecture.py`` reads these tables as import edges, so a lazy
export is held to the same layer rules as an import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` serving the names of ``table`` lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__`` (for error messages).
    table : mapping of str to str
        Public name -> the module that defines it. The package's ``__all__`` should list the
        same names.

    Returns
    -------
    tuple
        The module-level ``__getattr__(name)`` (imports the defining module, caches nothing:
        the module cache does) and ``__dir__()``.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(set(table) | {"__all__"})

    return __getattr__, __dir__

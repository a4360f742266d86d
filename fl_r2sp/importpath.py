"""Import paths ``pkg.module:attribute``: the one resolver and error format of both halves.

A user names their own model, dataset, loss or evaluation by the import path of a factory
(``--model mypkg.job:resnet18``), as ``uvicorn`` and setuptools' entry points do. Both the
federated and the cluster half resolve such a path here, and every failure raises
:class:`ImportPathError` with the message ``<what> '<spec>': <what was wrong>``, so a user sees
the same sentence whichever half refused the path. Nothing here imports torch or Flower.

Example
-------
>>> resolve("math:sqrt", "loss")(4.0)
2.0
>>> resolve("math:nosuch", "loss")
Traceback (most recent call last):
...
fl_r2sp.importpath.ImportPathError: loss 'math:nosuch': module 'math' has no attribute 'nosuch'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["ImportPathError", "check_form", "is_import_path", "path_of", "resolve"]


class ImportPathError(ValueError):
    """An import path that names no usable callable; the message names ``what`` and the path.

    Attributes
    ----------
    what : str
        The role of the path ("model", "dataset", ...).
    spec : str
        The path as given.
    problem : str
        What was wrong with it.
    """

    def __init__(self, what: str, spec: str, problem: str) -> None:
        super().__init__(f"{what} {spec!r}: {problem}")
        self.what, self.spec, self.problem = what, spec, problem


def is_import_path(text: str) -> bool:
    """Whether ``text`` has the form of an import path (contains ``:``), not a registry name."""
    return ":" in text


def check_form(spec: str, what: str) -> str:
    """Return ``spec`` if it has the form ``package.module:attribute`` (nothing is imported).

    Raises
    ------
    ImportPathError
        If it has not.
    """
    _split(spec, what)
    return spec


def _split(spec: str, what: str) -> tuple[str, list[str]]:
    module, sep, attr = spec.partition(":")
    parts = attr.split(".")
    names = [module, *module.split(".")] if module else []
    if not sep or not module or not attr or not all(p.isidentifier() for p in parts):
        raise ImportPathError(what, spec, "not of the form 'package.module:attribute'")
    if not all(n.isidentifier() for n in names[1:]):
        raise ImportPathError(what, spec, "not of the form 'package.module:attribute'")
    return module, parts


def resolve(spec: str, what: str) -> Callable[..., Any]:
    """The callable that ``spec`` (``"package.module:attribute"``, the attribute possibly
    dotted, e.g. ``"pkg.mod:Class.factory"``) names.

    Parameters
    ----------
    spec : str
        The import path.
    what : str
        Its role, named in the error message ("model", "dataset", "loss", ...).

    Raises
    ------
    ImportPathError
        If ``spec`` is not of that form, its module cannot be imported (the import's own
        error is chained and summarised), it has no such attribute, or the attribute is not
        callable.
    """
    module_name, parts = _split(spec, what)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # any error of the user's module makes the path unusable
        raise ImportPathError(what, spec, f"cannot import {module_name!r} "
                                          f"({type(exc).__name__}: {exc})") from exc  # fmt: skip
    where = module_name
    for part in parts:
        if not hasattr(obj, part):
            raise ImportPathError(what, spec, f"module {where!r} has no attribute {part!r}"
                                  if where == module_name else
                                  f"{where!r} has no attribute {part!r}")  # fmt: skip
        obj = getattr(obj, part)
        where = f"{where}:{part}" if where == module_name else f"{where}.{part}"
    if not callable(obj):
        raise ImportPathError(what, spec, f"is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]


def path_of(obj: Callable[..., Any], what: str) -> str:
    """The import path of a module-level callable, checked to resolve back to ``obj``.

    A function defined in a script run as ``python script.py`` (module ``__main__``) gets the
    script's module name (its file stem; the script's folder is on ``sys.path``), so that a
    process started later, which imports the path afresh, finds it too.

    Raises
    ------
    ImportPathError
        If ``obj`` is a lambda, a nested function or otherwise not reachable by import.
    """
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    shown = getattr(obj, "__name__", repr(obj))
    if not module or not qualname or "<" in qualname:
        raise ImportPathError(what, str(shown), "not importable: pass a function or class "
                              "defined at a module's top level, or its import path")  # fmt: skip
    script = module in ("__main__", "__mp_main__")
    if script:
        module = _main_module_name() or module
    spec = f"{module}:{qualname}"
    try:
        found = resolve(spec, what)
    except ImportPathError as exc:
        raise ImportPathError(what, spec, f"not importable by its path ({exc.problem})") from exc
    # A script's functions come back as the same code imported a second time (another object).
    if found is not obj and not script:
        raise ImportPathError(what, spec, "its import path names another object")
    return spec


def _main_module_name() -> str | None:
    """The importable name of the running script (``python -m pkg.mod`` or ``python x.py``)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return str(spec.name)
    path = getattr(main, "__file__", None)
    if not path:
        return None
    import os

    folder, stem = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(stem)[0]
    on_path = {os.path.abspath(p or os.getcwd()) for p in sys.path}
    return stem if stem.isidentifier() and folder in on_path else None

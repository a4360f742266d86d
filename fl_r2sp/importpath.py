"""Resolve a user's ``"package.module:attribute"`` import path to a callable.

Shared by every place that lets a user bring their own code by path (the
federated half's ``model`` and ``dataset`` run-config keys, cluster mode's
model and data arguments), so that a bad path reads the same everywhere::

    model 'my_pkg.nets:biuld': no attribute 'biuld' in 'my_pkg.nets'

Torch-free and import-light: resolving imports only the user's module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["ImportPathError", "is_import_path", "resolve"]


class ImportPathError(ValueError):
    """A user's import path that cannot be used.

    The message reads ``"<what> '<spec>': <what was wrong>"``: not importable, no such
    attribute, not callable, or not of the form ``package.module:attribute``.
    """


def is_import_path(spec: str) -> bool:
    """Whether a value names code by path (it has a ``:``) rather than a registry name.

    Registry names never contain ``:``, so the two cannot be confused; a path of the
    wrong form is refused by :func:`resolve`, not mistaken for a name.
    """
    return ":" in spec


def _fail(what: str, spec: str, problem: str) -> ImportPathError:
    return ImportPathError(f"{what} '{spec}': {problem}")


def _split(spec: str, what: str) -> tuple[str, str]:
    """``(module, attribute)`` of a well-formed spec, else :class:`ImportPathError`."""
    module, sep, attr = spec.partition(":")
    parts = module.split(".") if module else []
    dotted = attr.split(".") if attr else []
    if not sep or not all(p.isidentifier() for p in [*parts, *dotted]) or not parts or not dotted:
        raise _fail(
            what, spec, "not of the form 'package.module:attribute' (e.g. 'my_pkg.nets:build')"
        )
    return module, attr


def resolve(spec: str, what: str) -> Callable[..., Any]:
    """The callable that the import path ``spec`` names.

    Parameters
    ----------
    spec : str
        ``"package.module:attribute"``; the attribute may be dotted
        (``"my_pkg.nets:Builders.small"``). The module is imported with
        :func:`importlib.import_module`, so it must be importable from ``sys.path``
        (installed, or under the working directory / ``PYTHONPATH``).
    what : str
        What the path is for (``"model"``, ``"dataset"``), the start of every error.

    Returns
    -------
    Callable[..., Any]
        The attribute; calling it is the caller's business.

    Raises
    ------
    ImportPathError
        ``"<what> '<spec>': <what was wrong>"``: bad form, module not importable (with
        the import error), no such attribute, or an attribute that is not callable.
    """
    module_name, attr = _split(spec, what)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # the user's module may raise anything while importing
        raise _fail(
            what, spec, f"module '{module_name}' is not importable ({type(exc).__name__}: {exc})"
        ) from exc
    where = module_name
    for name in attr.split("."):
        if not hasattr(obj, name):
            raise _fail(what, spec, f"no attribute '{name}' in '{where}'")
        obj = getattr(obj, name)
        where = f"{where}:{name}" if where == module_name else f"{where}.{name}"
    if not callable(obj):
        raise _fail(what, spec, f"'{attr}' is a {type(obj).__name__}, not callable")
    return obj  # type: ignore[no-any-return]

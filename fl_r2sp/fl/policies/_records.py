"""Machinery of the parameter records: run-config keys on fields, one error format.

A *parameter record* is a frozen dataclass whose fields carry the Flower
run-config key they are read from (``metadata["key"]``) or, for a nested
record, the record type (``metadata["record"]``). That one mapping serves
three purposes: building records from a run config (:func:`build`), naming
the key in validation errors (:func:`require`, :func:`require_choice`) and
listing the scheme keys (:func:`keys_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, field, fields
from typing import Any, TypeVar, get_args

R = TypeVar("R")


def keyed(default: Any, key: str) -> Any:
    """A record field with ``default``, read from run-config key ``key``."""
    return field(default=default, metadata={"key": key})


def nested(record: type, default: Any = MISSING) -> Any:
    """A record field holding another record (its fields carry their own keys)."""
    return field(default=default, metadata={"record": record})


def _field(record: object, name: str) -> Field[Any]:
    return next(f for f in fields(record) if f.name == name)  # type: ignore[arg-type]


def require(record: object, name: str, ok: bool, how: str) -> None:
    """Raise ``ValueError`` naming field ``name`` of ``record`` and its key unless ``ok``.

    Parameters
    ----------
    record : dataclass instance
        The record being validated (its class and field metadata name the error).
    name : str
        Field name.
    ok : bool
        The condition that must hold.
    how : str
        What a valid value looks like.
    """
    if not ok:
        key = _field(record, name).metadata.get("key", name)
        value = getattr(record, name)
        raise ValueError(
            f"invalid {type(record).__name__}.{name}={value!r} (run-config key {key}): {how}"
        )


def require_choice(record: object, name: str, kind: Any) -> None:
    """:func:`require` that field ``name`` holds one of the ``Literal`` ``kind``'s values."""
    choices = get_args(kind)
    value = getattr(record, name)
    require(record, name, value in choices, "not one of " + ", ".join(map(repr, choices)))


def build(record: type[R], values: Mapping[str, Any]) -> R:
    """``record`` with every field read from ``values`` (run-config key -> value).

    Raises
    ------
    KeyError
        If ``values`` lacks one of the record's keys.
    ValueError
        From the record's own validation.
    """
    kwargs: dict[str, Any] = {}
    for f in fields(record):  # type: ignore[arg-type]
        if "record" in f.metadata:
            kwargs[f.name] = build(f.metadata["record"], values)
        else:
            kwargs[f.name] = values[f.metadata["key"]]
    return record(**kwargs)


def keys_of(record: type) -> dict[str, Any]:
    """Run-config key -> default of every field of ``record`` (nested records included).

    A field without a default maps to ``MISSING``.
    """
    out: dict[str, Any] = {}
    for f in fields(record):
        if "record" in f.metadata:
            default = f.default
            nested_keys = keys_of(f.metadata["record"])
            if default is not MISSING:  # the outer default overrides the record's own
                nested_keys = {k: _value_at(default, k) for k in nested_keys}
            out.update(nested_keys)
        else:
            out[f.metadata["key"]] = f.default
    return out


def _value_at(record: object, key: str) -> Any:
    """The value of the field of ``record`` read from ``key`` (searching nested records)."""
    for f in fields(record):  # type: ignore[arg-type]
        value = getattr(record, f.name)
        if f.metadata.get("key") == key:
            return value
        if "record" in f.metadata:
            found = _value_at(value, key)
            if found is not MISSING:
                return found
    return MISSING

"""Typed reads of Flower message records.

Flower types a record's values as wide unions (an entry of a ``RecordDict`` is an array,
metric or config record; a config value may be a number, string, bytes or a list). The
messages of this project carry one ``ArrayRecord`` of weights and plain numbers, so these
accessors check exactly that and return the narrow type: a malformed message fails here with
a ``TypeError`` naming the key, and the callers need no casts. :func:`number` reads any
mapping (a metric or config record, or a plain dict in tests).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np
from flwr.app import Array, ArrayRecord, RecordDict

#: The value type of a Flower ``MetricRecord`` (a dict passed to one must be typed so,
#: since ``dict`` is invariant: a ``dict[str, float]`` does not type-check).
MetricValue = int | float | list[int] | list[float]


def arrays_of(content: RecordDict, key: str = "arrays") -> list[np.ndarray]:
    """The NumPy arrays of the ``ArrayRecord`` stored under ``key`` (default ``"arrays"``).

    Raises
    ------
    KeyError
        ``content`` has no record ``key``.
    TypeError
        The record under ``key`` is not an ``ArrayRecord``.
    """
    record = content[key]
    if not isinstance(record, ArrayRecord):
        raise TypeError(f"record {key!r} is a {type(record).__name__}, expected an ArrayRecord")
    return record.to_numpy_ndarrays()


def number(record: Mapping[str, object], key: str, default: float | None = None) -> float:
    """The number (int or float, not bool) under ``key``; ``default`` if absent and given.

    The value comes back unconverted (an int stays an int), so ``int(number(...))`` and
    ``float(number(...))`` read exactly what was sent.

    Raises
    ------
    KeyError
        ``key`` is absent and ``default`` is None.
    TypeError
        The value is not an int or float (a string, bytes, bool or list).
    """
    value = record[key] if default is None or key in record else default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"record value {key!r} is a {type(value).__name__}, expected a number")
    return value


def named_record(arrays: Sequence[np.ndarray], names: Sequence[str] | None) -> ArrayRecord:
    """An ``ArrayRecord`` of ``arrays`` under ``names`` (the user's model's keys, e.g. a torch
    state dict's), so a ClientApp's ``to_torch_state_dict()`` finds its own parameter names;
    ``names`` None: Flower's list form (keys ``"0"``, ``"1"``, ...)."""
    if names is None:
        return ArrayRecord(list(arrays))
    if len(names) != len(arrays):
        raise ValueError(f"{len(arrays)} arrays but {len(names)} names")
    return ArrayRecord(
        OrderedDict((n, Array(np.asarray(a))) for n, a in zip(names, arrays, strict=True))
    )

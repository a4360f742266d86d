"""What a train reply must carry, what it may carry, and what its absence means.

A reply written as Flower's templates write it is enough: ``RecordDict({"arrays":
ArrayRecord, "metrics": MetricRecord({"num-examples": n, ...})})``. Everything else is
optional:

===============  ==========================================================================
key (metrics)    when absent
===============  ==========================================================================
num-examples     required: the reply is rejected (``malformed``) naming the missing key
train-loss       NaN (not reported); ``train_loss`` (Flower's templates' spelling) is read too
compute-s        virtual clock: the server's model of the job (:class:`JobTiming`:
                 device speed x local-iterations x jitter, as the project's ClientApp
                 reports it); wall clock: not used (the job lasts its measured round trip)
delay-s          virtual clock: the delay model's sample for (seed, partition, job), as
                 above; wall clock: 0 (nobody slept one: the delay model is not applied
                 to such clients, and the strategy says so in a warning at start)
===============  ==========================================================================

``arrays`` must fit the model: the same number of arrays, each with the shape and dtype of
``initial_arrays`` (else rejected as ``shape`` / ``dtype``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from flwr.app import ArrayRecord, RecordDict

from fl_r2sp.fl.flower.records import number
from fl_r2sp.fl.server.admission import MALFORMED_PREFIX, MISFIT_PREFIX

__all__ = ["ReplyContent", "mismatch", "read_reply"]

#: The loss keys read, in order (the project's, then Flower's templates').
LOSS_KEYS = ("train-loss", "train_loss")


@dataclass(frozen=True)
class ReplyContent:
    """The parts of a valid train reply the server uses."""

    arrays: list[np.ndarray]
    num_examples: int | float
    loss: float
    compute_s: float | None  # None = not reported (the timing rule of the clock applies)
    delay_s: float | None


def mismatch(arrays: Sequence[np.ndarray], template: Sequence[np.ndarray]) -> str | None:
    """Why ``arrays`` do not fit the model ``template`` (count/shape/dtype), or None."""
    if len(arrays) != len(template):
        return f"{len(arrays)} arrays, expected {len(template)}"
    for i, (a, t) in enumerate(zip(arrays, template, strict=True)):
        if a.shape != t.shape:
            return f"array {i} has shape {a.shape}, expected {t.shape}"
        if a.dtype != t.dtype:
            return f"array {i} has dtype {a.dtype}, expected {t.dtype}"
    return None


def _count(value: float) -> int | float:
    """``num-examples`` as sent: an int when integral (admission rejects the rest)."""
    return int(value) if float(value).is_integer() else value


def _optional(metrics: Mapping[str, object], key: str) -> float | None:
    return float(number(metrics, key)) if key in metrics else None


def read_reply(content: RecordDict, template: Sequence[np.ndarray]) -> ReplyContent | str:
    """The reply's content, or the error text that rejects it (naming what is wrong).

    The error starts with ``malformed reply`` (missing or mistyped content) or ``rejected
    update`` (arrays that do not fit the model), the admission ledger's reasons
    ``malformed`` and ``shape`` / ``dtype``.
    """
    need = "a train reply needs an 'arrays' ArrayRecord and metrics 'num-examples'"
    records: Callable[[], list[str]] = lambda: sorted(content.keys())  # noqa: E731
    if "arrays" not in content or not isinstance(content["arrays"], ArrayRecord):
        return f"{MALFORMED_PREFIX}: no ArrayRecord 'arrays' (records: {records()}); {need}"
    if "metrics" not in content or not _is_metrics(content["metrics"]):
        return f"{MALFORMED_PREFIX}: no MetricRecord 'metrics' (records: {records()}); {need}"
    metrics = content["metrics"]
    if "num-examples" not in metrics:
        return f"{MALFORMED_PREFIX}: metrics have no 'num-examples' (keys: {sorted(metrics)})"
    try:
        count = _count(number(metrics, "num-examples"))
        loss_key = next((k for k in LOSS_KEYS if k in metrics), None)
        loss = float(number(metrics, loss_key)) if loss_key else float("nan")
        compute, delay = _optional(metrics, "compute-s"), _optional(metrics, "delay-s")
    except TypeError as exc:
        return f"{MALFORMED_PREFIX}: {exc}"
    arrays = content["arrays"].to_numpy_ndarrays()
    problem = mismatch(arrays, template)
    if problem is not None:
        return f"{MISFIT_PREFIX}: {problem}"
    return ReplyContent(arrays, count, loss, compute, delay)


def _is_metrics(record: object) -> bool:
    """A metrics record: Flower's ``MetricRecord`` (or any mapping that is no ArrayRecord)."""
    return isinstance(record, Mapping) and not isinstance(record, ArrayRecord)

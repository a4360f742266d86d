"""Record what a reduce controller was told, and replay it into a fresh controller.

The runtime's controller thread drives its controller through a :class:`RecordingController`
and saves :attr:`~RecordingController.inputs` in the run directory
(``controller_inputs.json``). :func:`replay_inputs` feeds the same calls, with the same
``now`` stamps, compute times and bandwidth estimates, to a fresh controller built with the same
knobs: since a controller reads no clock and draws no random number, its trace must equal the
runtime's decision by decision. The check shows that the decisions the real runtime acted on
(launches, BPAWR's waits and holds) are the policy's own for those inputs.

Input entries: ``{"event": "start"|"ready"|"done"|"timer"|"lost"|"finish", "at": now, ...}``
with ``worker``, ``iteration``, ``compute_s`` (ready), ``group`` (done), ``worker`` (lost),
and ``bandwidth`` (the whole estimate vector, bytes/s) when it changed since the previous entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from fl_r2sp.cluster.policies.reduce.base import Launch, ReduceController

INPUT_EVENTS: tuple[str, ...] = ("start", "ready", "done", "timer", "lost", "finish")


class RecordingController:
    """Forwards every event to ``inner`` and records its inputs (see the module docstring).

    Every other attribute (``state``, ``queue``, ``bandwidth``, ``trace``, ...) is ``inner``'s,
    so the caller may use it where a :class:`ReduceController` is expected.

    Parameters
    ----------
    inner : ReduceController
        The controller that decides.
    """

    def __init__(self, inner: ReduceController) -> None:
        self.inner = inner
        self.inputs: list[dict[str, Any]] = []
        self._bandwidth = inner.bandwidth.copy()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _log(self, event: str, now: float, **fields: Any) -> None:
        entry: dict[str, Any] = {"event": event, "at": float(now), **fields}
        # The caller updates estimates in place between events; record the vector it held
        # when the next event arrived (the only time the controller reads it).
        if not np.array_equal(self.inner.bandwidth, self._bandwidth):
            self._bandwidth = self.inner.bandwidth.copy()
            entry["bandwidth"] = self._bandwidth.tolist()
        self.inputs.append(entry)

    def start(self, now: float) -> list[Launch]:
        """Record, then :meth:`ReduceController.start`."""
        self._log("start", now)
        return self.inner.start(now)

    def on_ready(self, worker: int, now: float, iteration: int, compute_s: float) -> list[Launch]:
        """Record, then :meth:`ReduceController.on_ready`."""
        self._log("ready", now, worker=int(worker), iteration=int(iteration),
                  compute_s=float(compute_s))  # fmt: skip
        return self.inner.on_ready(worker, now, iteration, compute_s)

    def on_done(self, group: int, now: float) -> list[Launch]:
        """Record, then :meth:`ReduceController.on_done`."""
        self._log("done", now, group=int(group))
        return self.inner.on_done(group, now)

    def on_timer(self, now: float) -> list[Launch]:
        """Record, then :meth:`ReduceController.on_timer`."""
        self._log("timer", now)
        return self.inner.on_timer(now)

    def on_worker_lost(self, worker: int, now: float) -> list[Launch]:
        """Record, then :meth:`ReduceController.on_worker_lost`."""
        self._log("lost", now, worker=int(worker))
        return self.inner.on_worker_lost(worker, now)

    def finish(self, now: float) -> None:
        """Record, then :meth:`ReduceController.finish`."""
        self._log("finish", now)
        self.inner.finish(now)


def replay_inputs(ctl: ReduceController, inputs: Iterable[Mapping[str, Any]]) -> list[Launch]:
    """Feed recorded inputs to a fresh ``ctl``; return every launch it made (its decisions,
    holds and waits included, are in ``ctl.trace``).

    Raises
    ------
    ValueError
        On an unknown event, or an input the controller refuses (e.g. a ready report of a
        worker that is not training: the inputs do not belong to this controller's knobs).
    """
    launches: list[Launch] = []
    for entry in inputs:
        event, now = entry["event"], float(entry["at"])
        if "bandwidth" in entry:
            ctl.bandwidth[:] = np.asarray(entry["bandwidth"], dtype=np.float64)
        if event == "start":
            launches += ctl.start(now)
        elif event == "ready":
            launches += ctl.on_ready(int(entry["worker"]), now, int(entry["iteration"]),
                                     float(entry["compute_s"]))  # fmt: skip
        elif event == "done":
            launches += ctl.on_done(int(entry["group"]), now)
        elif event == "timer":
            launches += ctl.on_timer(now)
        elif event == "lost":
            launches += ctl.on_worker_lost(int(entry["worker"]), now)
        elif event == "finish":
            ctl.finish(now)
        else:
            raise ValueError(f"unknown controller input {event!r}; expected one of {INPUT_EVENTS}")
    return launches

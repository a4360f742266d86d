"""The run directory of a cluster run: per-iteration worker rows, PS arrivals, policy trace.

Files (all written by :meth:`ClusterRunWriter.close`, each through a temporary file and an
atomic rename, the ``COMPLETE`` marker last, so a reader that sees the marker sees whole files).
The three CSV files are also appended to and flushed row by row while the run goes
(:class:`LiveCsv`), so a run that never reaches ``close`` (rank 0 killed, Ctrl-C, the time
limit) keeps every row recorded so far; a row that brings a new column rewrites the file once
with the wider header.

* ``workers.csv``: one row per worker and iteration, columns :data:`WORKER_FIELDS` then any
  extra fields in first-seen order;
* ``ps_updates.csv``: one row per update arrival at a PS shard (:data:`PS_FIELDS`);
* ``permissions.csv``: the coordinator policy's decision trace (columns as given);
* ``run.json``: ``{"config": ..., "summary": ..., "stats": ...}`` (stats from :mod:`.stats`),
  beside what an earlier ``run.json`` held (the roster of ranks written at the start);
* ``COMPLETE``: empty marker.

Worker-row semantics (the Gantt chart relies on them): ``t_start`` and ``t_end`` are seconds
since the run started; the phases follow each other from ``t_start`` in the order of
Algorithm 1: ``blocking_s`` (waiting for the permission or the barrier that starts the
iteration), ``pull_s``, ``compute_s``, ``push_s``. ``permission_s`` is the control-plane
latency of the Request-/Permission-to-Proceed exchange when the runtime measures it (informational).
``staleness`` counts the updates other workers applied between this worker's pull and push.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from .stats import summarize

WORKER_FIELDS: tuple[str, ...] = (
    "worker", "iteration", "permission_s", "pull_s", "compute_s", "push_s", "blocking_s",
    "batch_size", "staleness", "loss", "t_start", "t_end",
)  # fmt: skip
PS_FIELDS: tuple[str, ...] = ("shard", "worker", "iteration", "t")
MARKER = "COMPLETE"


class LiveCsv:
    """One CSV file that grows row by row: each row is appended and flushed as it comes.

    The header holds ``fields`` then every other key in first-seen order (as
    :meth:`ClusterRunWriter.close` writes it); a row with a key the header lacks rewrites the
    whole file once with the wider header (atomically), later rows are appended again. Not
    thread-safe: :class:`ClusterRunWriter` calls it under its lock.

    Parameters
    ----------
    path : Path
        The file (its folder is created at the first row).
    fields : tuple of str
        The leading columns.
    """

    def __init__(self, path: Path, fields: tuple[str, ...]) -> None:
        self.path, self.fields = path, fields
        self.rows: list[dict[str, Any]] = []
        self._columns = list(fields)
        self._out: tuple[TextIO, csv.DictWriter[str]] | None = None

    def append(self, row: dict[str, Any]) -> None:
        """Keep ``row`` and put it in the file (flushed)."""
        self.rows.append(row)
        new = [k for k in row if k not in self._columns]
        if self._out is None or new:
            self.stop()
            self._columns += new
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.path, _csv(self.rows, self.fields))
            fh: TextIO = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115
            out = csv.DictWriter(fh, fieldnames=self._columns, restval="", lineterminator="\n")
            self._out = (fh, out)
            return
        fh, out = self._out
        out.writerow(row)
        fh.flush()

    def stop(self) -> None:
        """Close the file (the rows are kept)."""
        if self._out is not None:
            self._out[0].close()
            self._out = None


class ClusterRunWriter:
    """Collects a cluster run's telemetry in memory (thread-safe), streams every row to its
    CSV file as it comes (:class:`LiveCsv`) and writes every file again on close.

    Parameters
    ----------
    run_dir : str or Path
        Output folder (created on :meth:`close`).
    config : Mapping or None, default None
        Run configuration stored in ``run.json`` (must be JSON-serialisable, or have a
        ``str`` form).
    trace_order : str or None, default None
        Column by which :meth:`close` sorts ``permissions.csv`` (e.g. ``"at"``: the PS
        coordinator records a held permission before the deliveries due earlier); None keeps
        the order of recording, which is also the live file's order.
    """

    def __init__(self, run_dir: str | Path, config: Mapping[str, Any] | None = None,
                 trace_order: str | None = None) -> None:  # fmt: skip
        self.run_dir = Path(run_dir)
        self.config = dict(config or {})
        self.trace_order = trace_order
        self._lock = threading.Lock()
        self._closed = False
        self._workers = LiveCsv(self.run_dir / "workers.csv", WORKER_FIELDS)
        self._ps = LiveCsv(self.run_dir / "ps_updates.csv", PS_FIELDS)
        self._trace = LiveCsv(self.run_dir / "permissions.csv", ())

    @property
    def workers(self) -> list[dict[str, Any]]:
        """The worker rows recorded so far (the live list: do not modify)."""
        return self._workers.rows

    @property
    def ps(self) -> list[dict[str, Any]]:
        """The PS arrival rows recorded so far (the live list: do not modify)."""
        return self._ps.rows

    @property
    def trace(self) -> list[dict[str, Any]]:
        """The decision rows recorded so far (the live list: do not modify)."""
        return self._trace.rows

    def worker_row(self, **fields: Any) -> None:
        """Record one worker iteration (``worker`` and ``iteration`` are required ints)."""
        for key in ("worker", "iteration"):
            if not isinstance(fields.get(key), int):
                raise ValueError(f"worker_row needs an int {key!r}, got {fields.get(key)!r}")
        self._append(self._workers, fields)

    def ps_row(self, shard: int, worker: int, iteration: int, t: float) -> None:
        """Record that ``worker``'s update of ``iteration`` reached PS ``shard`` at ``t`` s."""
        self._append(self._ps, {"shard": shard, "worker": worker, "iteration": iteration, "t": t})

    def trace_rows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Record policy decisions (e.g. a policy's ``trace`` list) for ``permissions.csv``."""
        for row in rows:
            self._append(self._trace, dict(row))

    def _append(self, target: LiveCsv, row: dict[str, Any]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"ClusterRunWriter({self.run_dir}) is already closed")
            target.append(row)

    def close(self, summary: Mapping[str, Any] | None = None) -> Path:
        """Write every file (see the module doc) and return the run directory.

        Parameters
        ----------
        summary : Mapping or None, default None
            Run outcome from the runtime (stop reason, wall time, ...), stored in
            ``run.json`` beside the statistics computed from the rows.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError(f"ClusterRunWriter({self.run_dir}) is already closed")
            self._closed = True
            for live in (self._workers, self._ps, self._trace):
                live.stop()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        marker = self.run_dir / MARKER
        marker.unlink(missing_ok=True)  # a rerun into the same folder is incomplete until done
        trace, order = self.trace, self.trace_order
        if order is not None:  # stable: equal keys keep the order of recording
            trace = sorted(trace, key=lambda r: r[order])
        _write_atomic(self.run_dir / "workers.csv", _csv(self.workers, WORKER_FIELDS))
        _write_atomic(self.run_dir / "ps_updates.csv", _csv(self.ps, PS_FIELDS))
        _write_atomic(self.run_dir / "permissions.csv", _csv(trace, ()))
        doc = {**read_json(self.run_dir / "run.json"), "config": self.config,
               "summary": dict(summary or {}),
               "stats": summarize(self.workers, self.ps)}  # fmt: skip
        text = json.dumps(_clean(doc), indent=2, sort_keys=True, default=str)
        _write_atomic(self.run_dir / "run.json", text + "\n")
        _write_atomic(marker, "")
        return self.run_dir


def read_json(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``, or {} when it is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _csv(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> str:
    """CSV text with ``fields`` first, then extra keys in first-seen order; blanks for gaps."""
    columns = list(fields)
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _clean(value: Any) -> Any:
    """NaN/inf to None (strict JSON); tuples to lists; recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary sibling and ``os.replace`` (atomic on POSIX)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)

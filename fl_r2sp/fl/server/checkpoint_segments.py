"""The growing containers of a checkpointed state, stored in segments appended at each save.

A long run's state is mostly containers that only grow: the event log's job rows and
records, the history, the replies received, the network model's finished flows and its load
trace. Written whole at every save, they made a save cost grow with the run (measured: 0.6,
1.2 and 1.8 s at updates 100, 200 and 300 of a 32-client timing run). Here every ``list`` or
``dict`` of at least :data:`LOG_MIN` entries met in the state is a *log*: the head
(``checkpoint.npz``) stores ``{"$log": k}`` in its place and ``{"$logref": [k, i]}`` wherever
else its entry ``i`` is referred to, and each save appends one segment
(``checkpoint-log/segment-NNNNNN.npz``, the archive format of
:mod:`fl_r2sp.fl.server.checkpoint_archive`) holding only the entries that are new or changed
since the last save. The writer keeps a deep copy of every entry it stored; an entry is
unchanged if it equals its copy (one comparison of the old prefix, in C; entry by entry, with
a BLAKE2 digest of ``pickle.dumps`` for entries holding arrays, only when that fails:
``pickle`` only writes here, nothing is ever read back with it). A save thus encodes and
writes the head and what changed; what still grows with the run is that comparison and a map
of the entries' ids, a few microseconds per entry (measured: a save with nothing new took
0.07 s with 11k log entries and 0.11 s with 22k, the head included).

Entries are stored by value, as plain data (numbers, strings, lists, dicts, sets, arrays);
references to other entries are kept (a job row in ``_open`` is the row of ``jobs``), each
pointing to an entry earlier in (log, index) order, so reading never loops. A container whose
entries are not such data (instances, a later entry) stays in the head, stored whole.

Crash safety: a segment gets a new name and is written (atomically) before the head that
lists it; the head replaces the old one atomically; only then are the segment files it no
longer lists deleted. A crash at any point leaves the previous head with all the segments it
lists. When the segments hold more than twice the live entries (or more than
:data:`MAX_SEGMENTS` files) a save writes every entry into one new segment (compaction), as
does the first save of a resumed run.
"""

from __future__ import annotations

import copy
import hashlib
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fl_r2sp.fl.server.checkpoint_archive import CheckpointError, archive, read_archive
from fl_r2sp.fl.server.state_codec import CodecError, StateDecoder, StateEncoder, encode

#: Least entries of a list or dict stored as a log (smaller ones go whole into the head).
LOG_MIN = 256
#: Segment files before a save compacts them into one.
MAX_SEGMENTS = 64
#: Folder of the segments in the run directory, and the segments' header kind.
FOLDER = "checkpoint-log"
KIND = "fl_r2sp-checkpoint-segment"
_NAME = re.compile(r"segment-(\d{6})\.npz")


class _Refused(CodecError):
    """A log whose entries cannot be stored by value; it goes into the head."""

    def __init__(self, key: int, why: str) -> None:
        super().__init__(why)
        self.key = key


def _digest(value: Any) -> bytes | None:
    """A digest of ``value``'s content (None: cannot be taken; the entry counts as changed)."""
    try:
        data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        return hashlib.blake2b(data, digest_size=16).digest()
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None


def _same(old: Any, new: Any) -> bool:
    """Whether ``new`` has the content of ``old`` (a deep copy taken when it was stored)."""
    try:
        return bool(old == new)
    except (ValueError, TypeError):  # arrays inside: compare digests of their content
        digest = _digest(old)
        return digest is not None and digest == _digest(new)


@dataclass
class _Log:
    """A container stored as a log, and a deep copy of what the segments hold of it."""

    key: int
    container: list[Any] | dict[Any, Any]
    stored: list[Any] = field(default_factory=list)  # per position: value (list) or pair

    def items(self) -> list[Any]:
        """Per position: the value (a list's) or the (key, value) pair (a dict's)."""
        c = self.container
        return list(c.items()) if isinstance(c, dict) else list(c)

    def changed(self, items: list[Any]) -> list[int]:
        """Positions whose entry is new or differs from what the segments hold."""
        n = min(len(self.stored), len(items))
        try:
            if items[:n] == self.stored[:n]:  # one comparison in C: the usual case
                return list(range(n, len(items)))
        except (ValueError, TypeError):  # arrays inside: entry by entry
            pass
        old = [i for i in range(n) if not _same(self.stored[i], items[i])]
        return old + list(range(n, len(items)))


class SegmentWriter:
    """Writes a state's head tree and the segment of what changed (one per run directory).

    Use :meth:`encode` (the head's tree and arrays, and the segment bytes), write both
    files, then :meth:`commit`.
    """

    def __init__(self, directory: Path) -> None:
        self.folder = directory / FOLDER
        self.logs: dict[int, _Log] = {}  # id(container) -> log
        self.refused: dict[int, Any] = {}  # id -> container kept whole (held: ids stay unique)
        self.segments: list[dict[str, Any]] = []  # listed by the head: file, content_hash
        self.stored = 0  # entries over all listed segments
        existing = [int(m.group(1)) for p in self._files() if (m := _NAME.fullmatch(p.name))]
        self.counter = max(existing, default=-1) + 1  # never overwrite a listed segment
        self.pending: tuple[dict[int, _Log], list[dict[str, Any]], int] | None = None

    def _files(self) -> list[Path]:
        return sorted(self.folder.glob("segment-*.npz")) if self.folder.is_dir() else []

    def encode(self, state: Any) -> tuple[Any, list[np.ndarray], dict[str, Any], bytes | None]:
        """The head's tree and arrays, the logs' manifest (for the head's state) and the new
        segment's bytes (None if nothing changed), to be written at ``manifest["segments"][-1]``.
        """
        for _ in range(8):  # each pass may find or refuse a log; then the head is encoded again
            try:
                return self._encode(state)
            except _Refused as exc:
                log = next(g for g in self.logs.values() if g.key == exc.key)
                self.refused[id(log.container)] = log.container
                del self.logs[id(log.container)]
        raise CodecError("the state's logs did not settle in 8 passes")

    def _encode(self, state: Any) -> tuple[Any, list[np.ndarray], dict[str, Any], bytes | None]:
        entries: dict[int, tuple[int, int]] = {}
        for log in sorted(self.logs.values(), key=lambda g: g.key):
            values = log.container.values() if isinstance(log.container, dict) else log.container
            for i, value in enumerate(values):
                entries.setdefault(id(value), (log.key, i))
        used: set[int] = set()
        found: list[Any] = []

        def external(x: Any) -> Any:
            log = self.logs.get(id(x))
            if log is not None:
                used.add(log.key)
                return {"$log": log.key}
            if id(x) in entries:
                return {"$logref": list(entries[id(x)])}
            if type(x) in (list, dict) and len(x) >= LOG_MIN and id(x) not in self.refused:
                if all(f is not x for f in found):
                    found.append(x)
                return {"$log": -1}  # the pass is done again with it as a log
            return None

        tree, arrays = encode(state, external)
        if found:
            for container in found:
                key = max((g.key for g in self.logs.values()), default=-1) + 1
                self.logs[id(container)] = _Log(key, container)
            return self._encode(state)
        if len(used) < len(self.logs):  # a container no longer in the state (replaced by
            # another): its entries must not be referred to, so forget it and encode again
            self.logs = {i: g for i, g in self.logs.items() if g.key in used}
            return self._encode(state)
        live = list(self.logs.values())
        compact = self.stored > 2 * sum(len(g.container) for g in live) + LOG_MIN or (
            len(self.segments) >= MAX_SEGMENTS
        )
        manifest, data = self._segment(live, entries, compact)
        return tree, arrays, manifest, data

    def _segment(
        self, live: list[_Log], entries: dict[int, tuple[int, int]], compact: bool
    ) -> tuple[dict[str, Any], bytes | None]:
        at: list[tuple[int, int]] = [(-1, -1)]  # the entry being encoded

        def external(x: Any) -> Any:
            ref = entries.get(id(x))
            if ref is None:
                return None
            if ref >= at[0]:
                raise _Refused(at[0][0], f"log entry {at[0]} refers to a later entry {ref}")
            return {"$logref": list(ref)}

        roots: list[Any] = []
        where: list[tuple[int, int, bool]] = []  # (key, index, is a dict's) per entry
        new: dict[int, _Log] = {}
        for log in live:
            items = log.items()
            stored = [] if compact else log.stored[: len(items)]
            stored += [None] * (len(items) - len(stored))
            for i in log.changed(items) if not compact else range(len(items)):
                stored[i] = copy.deepcopy(items[i])
                roots.append(items[i])
                where.append((log.key, i, isinstance(log.container, dict)))
            new[id(log.container)] = _Log(log.key, log.container, stored)
        rows = self._rows(roots, where, entries, external, at)
        segments = [] if compact else list(self.segments)
        logs = {
            str(g.key): {"kind": "dict" if isinstance(g.container, dict) else "list",
                         "length": len(g.container)}
            for g in live
        }  # fmt: skip
        data = None
        if rows[0] or compact:
            name = f"segment-{self.counter:06d}.npz"
            data, digest = archive(KIND, {}, {"rows": rows[0], "objects": rows[1]}, rows[2])
            segments.append({"file": name, "content_hash": digest, "entries": len(rows[0])})
        stored_count = (0 if compact else self.stored) + len(rows[0])
        self.pending = (new, segments, stored_count)
        return {"logs": logs, "segments": segments}, data

    @staticmethod
    def _rows(
        roots: list[Any],
        where: list[tuple[int, int, bool]],
        entries: dict[int, tuple[int, int]],
        external: Any,
        at: list[tuple[int, int]],
    ) -> tuple[list[list[Any]], list[Any], list[np.ndarray]]:
        """``[key, index, value node, dict key node]`` per entry, the shared table, arrays."""
        enc = StateEncoder(external, plain=True)
        rows = []
        for item, (key, i, is_dict) in zip(roots, where, strict=True):
            at[0] = (key, i)
            dict_key, value = item if is_dict else (None, item)
            home = entries.get(id(value), (key, i))
            try:
                if home > (key, i):
                    raise _Refused(key, f"log entry {(key, i)} is the later entry {home}")
                # The same object as an earlier entry (a job row in jobs and in _open): refer.
                node = {"$logref": list(home)} if home != (key, i) else enc.root(value)
                key_node = enc.root(dict_key) if is_dict else None
            except _Refused:
                raise
            except CodecError as exc:
                raise _Refused(key, str(exc)) from None
            rows.append([key, i, node, key_node])
        return rows, enc.table, enc.arrays

    def commit(self) -> None:
        """The head listing the new segment is on disk: remember what the segments hold and
        delete the segment files it no longer lists."""
        assert self.pending is not None, "commit() without encode()"
        new, self.segments, self.stored = self.pending
        self.pending = None
        self.logs = new
        self.counter += 1
        listed = {s["file"] for s in self.segments}
        for path in self._files():
            if path.name not in listed:
                path.unlink(missing_ok=True)


class SegmentReader:
    """Rebuilds the logs a head lists from its segments: the ``resolve`` of
    :func:`fl_r2sp.fl.server.state_codec.decode` for ``$log`` and ``$logref`` nodes.

    Raises
    ------
    CheckpointError
        Naming the segment file that is missing, damaged, or not the one the head lists.
    """

    def __init__(self, directory: Path, manifest: dict[str, Any]) -> None:
        self.folder = directory / FOLDER
        self.kinds = {int(k): (v["kind"], int(v["length"])) for k, v in manifest["logs"].items()}
        self.where: dict[tuple[int, int], tuple[StateDecoder, Any, Any, Path]] = {}
        for segment in manifest["segments"]:  # oldest first: a later entry replaces one
            path = self.folder / str(segment["file"])
            header, doc, arrays = read_archive(path, KIND)
            if header["content_hash"] != segment["content_hash"]:
                raise CheckpointError(
                    f"{path}: not the segment the checkpoint lists (another save's); the "
                    "checkpoint cannot be completed"
                )
            try:
                table = {"root": None, "objects": doc["objects"]}
                decoder = StateDecoder(table, arrays, self.resolve)
                for key, i, node, key_node in doc["rows"]:
                    self.where[(int(key), int(i))] = (decoder, node, key_node, path)
            except (CodecError, KeyError, TypeError, ValueError) as exc:
                raise CheckpointError(f"{path}: damaged ({exc})") from None
        self.built: dict[tuple[int, int], tuple[Any, Any]] = {}
        self.building: set[tuple[int, int]] = set()
        self.containers: dict[int, Any] = {}

    def resolve(self, tag: str, argument: Any) -> Any:
        """The container (``$log``) or entry value (``$logref``) a node stands for."""
        if tag == "$log":
            return self._container(int(argument))
        key, index = argument
        return self._entry(int(key), int(index))[1]

    def _container(self, key: int) -> Any:
        if key in self.containers:
            return self.containers[key]
        if key not in self.kinds:
            raise CodecError(f"log {key} is not in the checkpoint's list of logs")
        kind, length = self.kinds[key]
        container: Any = {} if kind == "dict" else []
        self.containers[key] = container  # before the entries: they may refer to it
        for i in range(length):
            dict_key, value = self._entry(key, i)
            if kind == "dict":
                container[dict_key] = value
            else:
                container.append(value)
        return container

    def _entry(self, key: int, index: int) -> tuple[Any, Any]:
        """(dict key or None, value) of entry ``index`` of log ``key``."""
        at = (key, index)
        if at in self.built:
            return self.built[at]
        if at not in self.where:
            raise CheckpointError(f"{self.folder}: entry {index} of log {key} is in no segment")
        if at in self.building:  # the writer refers only to earlier entries
            raise CodecError(f"entry {index} of log {key} refers to itself")
        decoder, node, key_node, path = self.where[at]
        self.building.add(at)
        try:
            value = decoder.value(node)
            dict_key = None if key_node is None else decoder.value(key_node)
        except (CodecError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CheckpointError):
                raise
            raise CheckpointError(f"{path}: damaged entry {index} of log {key} ({exc})") from None
        self.building.discard(at)
        self.built[at] = (dict_key, value)
        return self.built[at]

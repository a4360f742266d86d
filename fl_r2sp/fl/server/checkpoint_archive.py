"""The file format of a checkpoint's parts: a ``.npz`` archive with a JSON header, no pickle.

Members: ``header`` (UTF-8 JSON: ``kind``, format version, the SHA-256 of the content, the
number of arrays, and what the writer adds), ``state`` (UTF-8 JSON) and the arrays ``a0``,
``a1`` ... Read with ``allow_pickle=False``. The head ``checkpoint.npz`` and the segments of
its growing containers (:mod:`fl_r2sp.fl.server.checkpoint_segments`) are such archives, told
apart by ``kind``. A file that is empty, a pickle, foreign, truncated or damaged, of another
format, or altered since it was written is refused with :class:`CheckpointError` naming it.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

#: Version of the checkpoint layout; a file of another version is refused (3: segments).
FORMAT = 3


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed; the message names the file and why."""


def content_hash(state: bytes, arrays: list[np.ndarray]) -> str:
    """SHA-256 of the state's bytes and every array (dtype, shape and data)."""
    digest = hashlib.sha256(state)
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def archive(
    kind: str, header: dict[str, Any], state: Any, arrays: list[np.ndarray]
) -> tuple[bytes, str]:
    """The ``.npz`` bytes of ``state`` (JSON) and ``arrays`` under a header of ``kind``, and
    their content hash.

    ``header`` holds the writer's own header fields; ``kind``, ``format``, ``content_hash``
    and ``arrays`` are added.
    """
    state_bytes = json.dumps(state, separators=(",", ":")).encode()
    head = {
        **header, "kind": kind, "format": FORMAT,
        "content_hash": content_hash(state_bytes, arrays), "arrays": len(arrays),
    }  # fmt: skip
    members: dict[str, Any] = {
        "header": np.frombuffer(json.dumps(head).encode(), np.uint8),
        "state": np.frombuffer(state_bytes, np.uint8),
    }
    members.update((f"a{i}", a) for i, a in enumerate(arrays))
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **members)
    return buf.getvalue(), str(head["content_hash"])


def read_archive(path: Path, kind: str) -> tuple[dict[str, Any], Any, list[np.ndarray]]:
    """Header, JSON state and arrays of the archive of ``kind`` at ``path``, hash checked.

    Raises
    ------
    CheckpointError
        Naming ``path`` and whether it is missing, empty, a pickle, foreign, truncated or
        damaged, of another format, or altered since it was written.
    """
    try:
        head = path.read_bytes()[:4]
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (the checkpoint lists it)") from None
    if not head:
        raise CheckpointError(f"{path}: empty file (0 bytes); the checkpoint was lost")
    if head[:1] == b"\x80":
        raise CheckpointError(f"{path}: a Python pickle, not a checkpoint; refused unread")
    if head != b"PK\x03\x04":
        raise CheckpointError(f"{path}: a foreign file, not a checkpoint (no .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if "header" not in npz.files:
                raise CheckpointError(f"{path}: a foreign .npz archive (no checkpoint header)")
            header = json.loads(npz["header"].tobytes())
            _check_header(path, header, kind)
            state_bytes = npz["state"].tobytes()
            arrays = [npz[f"a{i}"] for i in range(int(header["arrays"]))]
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError) as exc:
        raise CheckpointError(f"{path}: truncated or damaged ({exc})") from None
    except (ValueError, TypeError) as exc:  # a header or member that is not what we wrote
        raise CheckpointError(f"{path}: damaged ({exc})") from None
    if content_hash(state_bytes, arrays) != header["content_hash"]:
        raise CheckpointError(f"{path}: damaged (its content does not match its header's hash)")
    return header, json.loads(state_bytes), arrays


def _check_header(path: Path, header: Any, kind: str) -> None:
    if not isinstance(header, dict) or header.get("kind") != kind:
        raise CheckpointError(f"{path}: a foreign .npz archive (its header is not a {kind}'s)")
    if header.get("format") != FORMAT:
        raise CheckpointError(
            f"{path}: checkpoint format {header.get('format')!r}; this version reads format "
            f"{FORMAT} only"
        )

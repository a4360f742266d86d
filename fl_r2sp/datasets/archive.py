"""Readers for the packed ``.npz`` archives (concatenated JPEG / FLAC blobs).

Layout: ``data`` is one uint8 array of all
files back to back and ``offsets`` (int64, N + 1) delimits record ``i`` as
``data[offsets[i]:offsets[i + 1]]``; the other fields are per-record metadata.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError


def corrupt_error(path: Path, why: str) -> ValueError:
    """``ValueError`` for an unreadable data file, saying how to recover."""
    return ValueError(
        f"data file {path} is corrupt or not in the expected format ({why}); "
        "replace it with a fresh copy (or delete it so another layout is used)"
    )


def open_archive(path: Path, required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Load the fields ``required`` of the archive at ``path``, validated.

    Raises
    ------
    ValueError
        If the file is not a readable ``.npz``, lacks a field, or its
        ``offsets`` do not delimit ``data``.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [f for f in required if f not in z.files]
            if missing:
                raise corrupt_error(path, f"missing fields {missing}; has {sorted(z.files)}")
            fields = {name: z[name] for name in required}
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise corrupt_error(path, f"{type(exc).__name__}: {exc}") from exc
    except ValueError as exc:
        if "corrupt" in str(exc):
            raise
        raise corrupt_error(path, str(exc)) from exc
    if "offsets" in fields and "data" in fields:
        off = fields["offsets"]
        if off.ndim != 1 or len(off) < 1 or off[0] != 0 or off[-1] != len(fields["data"]):
            raise corrupt_error(path, "offsets do not span the data blob")
        if np.any(np.diff(off) < 0):
            raise corrupt_error(path, "offsets are not increasing")
    return fields


def record(data: np.ndarray, offsets: np.ndarray, i: int) -> bytes:
    """Bytes of record ``i``."""
    return data[offsets[i] : offsets[i + 1]].tobytes()


def decode_jpegs(
    path: Path,
    data: np.ndarray,
    offsets: np.ndarray,
    indices: np.ndarray,
    shape: tuple[int, ...],
    mode: str,
) -> np.ndarray:
    """Decode records ``indices`` as JPEG images into a uint8 array.

    Parameters
    ----------
    path : Path
        Archive path (for error messages only).
    data, offsets : np.ndarray
        The archive's blob and offsets.
    indices : np.ndarray
        Records to decode, in output order.
    shape : tuple of int
        Expected array shape of one image, e.g. ``(32, 32, 3)``.
    mode : str
        Pillow mode to convert to (``"RGB"`` or ``"L"``).

    Returns
    -------
    np.ndarray
        ``(len(indices), *shape)`` uint8.
    """
    out = np.empty((len(indices), *shape), dtype=np.uint8)
    for row, i in enumerate(indices):
        try:
            with Image.open(io.BytesIO(record(data, offsets, int(i)))) as im:
                arr = np.asarray(im.convert(mode))
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            raise corrupt_error(path, f"record {i} is not a readable JPEG: {exc}") from exc
        if arr.shape != shape:
            raise corrupt_error(path, f"record {i} has shape {arr.shape}, expected {shape}")
        out[row] = arr
    return out

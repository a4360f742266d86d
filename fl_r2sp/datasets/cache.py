"""Decode-once cache of NumPy arrays, keyed by the source files' fingerprints.

An entry is a folder ``<cache_dir>/<kind>-<digest>/`` holding one ``.npy``
per array plus a ``COMPLETE`` marker. It is written into a temporary folder
and renamed into place, so concurrent processes (several Ray actors decoding
at once) never see a half-written entry: the first rename wins and the
others discard their copy. The digest covers the source paths, sizes and
modification times, the decode parameters and :data:`CACHE_VERSION`, so a
changed source file or decoder gets a fresh entry.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from .paths import cache_dir

CACHE_VERSION = 1
_MARKER = "COMPLETE"


def cache_key(kind: str, sources: list[Path], params: Mapping[str, object]) -> str:
    """Entry name for ``kind`` built from ``sources`` and decode ``params``."""
    h = hashlib.sha256(f"v{CACHE_VERSION}|{kind}".encode())
    for src in sources:
        st = src.stat()
        h.update(f"|{src.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode())
    for name in sorted(params):
        h.update(f"|{name}={params[name]!r}".encode())
    return f"{kind}-{h.hexdigest()[:20]}"


def _read_entry(folder: Path) -> dict[str, np.ndarray] | None:
    if not (folder / _MARKER).exists():
        return None
    try:
        return {p.stem: np.load(p, allow_pickle=False) for p in sorted(folder.glob("*.npy"))}
    except (OSError, ValueError, EOFError):
        # A damaged cache is not the user's data: drop it and decode again.
        shutil.rmtree(folder, ignore_errors=True)
        return None


def _write_entry(folder: Path, arrays: Mapping[str, np.ndarray]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, arr in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(arr), allow_pickle=False)
        (tmp / _MARKER).write_text("ok\n")
        os.rename(tmp, folder)
    except OSError:
        # Lost the race to another process (target exists) or disk trouble:
        # the arrays are still returned to the caller, only caching is skipped.
        shutil.rmtree(tmp, ignore_errors=True)


def cached_arrays(
    kind: str,
    sources: list[Path],
    params: Mapping[str, object],
    build: Callable[[], dict[str, np.ndarray]],
) -> tuple[dict[str, np.ndarray], bool]:
    """Return the arrays of ``kind``, decoding with ``build`` only on a miss.

    Parameters
    ----------
    kind : str
        Short name of the entry, e.g. ``"cifar10-npz-train"``.
    sources : list of Path
        Files (or folders) whose fingerprint keys the entry.
    params : Mapping
        Decode parameters that change the result.
    build : callable
        Produces the arrays (names must be valid file stems).

    Returns
    -------
    (dict of np.ndarray, bool)
        The arrays and whether they came from the cache.
    """
    folder = cache_dir() / cache_key(kind, sources, params)
    hit = _read_entry(folder)
    if hit is not None:
        return hit, True
    arrays = build()
    _write_entry(folder, arrays)
    return arrays, False

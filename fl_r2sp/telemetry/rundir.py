"""Run directories that are never mistaken for complete: unique names, atomic files, a marker.

Rules every writer of a run directory follows (``docs/architecture.md`` §9):

* **Unique names.** :func:`reserve_run_dir` creates the folder with an exclusive ``mkdir``;
  if the name is taken (two runs finishing in the same second, say) it tries ``name-2``,
  ``name-3`` ... so two runs never share a folder, even from different processes.
* **Atomic files.** Every file appears whole or not at all: it is written under a temporary
  name in the same folder and renamed into place (:func:`atomic_write_bytes`,
  :func:`atomic_write_text`, :func:`staged` for writers that only take a folder), with one
  mode, :data:`FILE_MODE`.
* **A completion marker, last.** :func:`mark_complete` writes ``COMPLETE`` after every other
  file; a reader that sees it sees whole files (:func:`is_complete`, :func:`complete_run_dirs`).
  A run killed while writing leaves a folder without the marker, which readers skip, and a
  killed checkpointed run leaves its checkpoint there to resume from.

The marker's name is the one the cluster mode's run writer uses.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Name of the completion marker (written last).
MARKER = "COMPLETE"
#: Largest counter suffix tried before giving up on a name.
MAX_SUFFIX = 10_000
#: Prefix of temporary files and staging folders (readers ignore it).
TMP_PREFIX = ".tmp-"
#: Mode of every file of a run directory (``mkstemp`` would give 0600, plot writers 0644
#: less the umask): one mode, readable by the group and others like a plain ``open``'s.
FILE_MODE = 0o644


def reserve_run_dir(parent: str | os.PathLike[str], name: str) -> Path:
    """Create and return a new, empty folder ``parent/name`` (``name-2``, ... if taken).

    Parameters
    ----------
    parent : str or PathLike
        Folder that holds run directories (created if missing).
    name : str
        Wanted folder name; must be a plain name (no separators, not hidden).

    Raises
    ------
    ValueError
        If ``name`` is empty, contains a path separator or starts with a dot.
    FileExistsError
        If ``name`` and ``MAX_SUFFIX`` numbered variants are all taken.
    """
    if not name or os.sep in name or "/" in name or name.startswith("."):
        raise ValueError(f"run directory name {name!r} must be a plain, non-hidden folder name")
    base = Path(parent)
    base.mkdir(parents=True, exist_ok=True)
    for i in range(1, MAX_SUFFIX + 1):
        path = base / (name if i == 1 else f"{name}-{i}")
        try:
            path.mkdir()  # exclusive: fails if another run holds the name
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free run directory name {name!r}(-N) under {base}")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename.

    The temporary file lives in the same folder (a rename across file systems
    is not atomic) and is fsynced before the rename, so after a crash ``path``
    holds either its old content or all of ``data``.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX + path.name + ".", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically (unknown types via ``str``)."""
    return atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


@contextmanager
def staged(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary folder inside ``directory`` whose files are renamed into it on success.

    For writers that only take a folder (plots, the event log): each file
    they write appears in ``directory`` whole, by an atomic rename. On an
    exception the staging folder is removed and nothing is moved.

    Yields
    ------
    Path
        The staging folder (hidden, next to the final files).
    """
    target = Path(directory)
    stage = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=target))
    try:
        yield stage
        for item in sorted(stage.iterdir()):
            if item.is_file():
                item.chmod(FILE_MODE)
                os.replace(item, target / item.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def mark_complete(directory: str | os.PathLike[str], info: dict[str, Any] | None = None) -> Path:
    """Write the ``COMPLETE`` marker (JSON: the folder's files and ``info``); call it last."""
    folder = Path(directory)
    files = sorted(
        p.name
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(TMP_PREFIX) and p.name != MARKER
    )
    return atomic_write_json(folder / MARKER, {"files": files, **(info or {})})


def is_complete(directory: str | os.PathLike[str]) -> bool:
    """True if ``directory`` holds the completion marker."""
    return (Path(directory) / MARKER).is_file()


def complete_run_dirs(parent: str | os.PathLike[str]) -> list[Path]:
    """The complete run directories directly under ``parent``, sorted by name.

    Folders without the marker (a run still going, killed while writing, or
    waiting to be resumed) and hidden folders are left out; a missing
    ``parent`` gives an empty list.
    """
    base = Path(parent)
    if not base.is_dir():
        return []
    return sorted(
        p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".") and is_complete(p)
    )

"""Where data files are read from and where decoded arrays are cached.

Resolution order of the data directory (first that applies wins):

1. an explicit ``data_dir`` argument (``""`` counts as "not given", so an empty
   run-config value falls through),
2. the environment variable ``FL_R2SP_DATA``,
3. a per-user cache directory: ``$XDG_CACHE_HOME/fl_r2sp`` or ``~/.cache/fl_r2sp``.

Decoded arrays are cached under :func:`cache_dir` (``$FL_R2SP_CACHE`` if set,
else ``<per-user cache>/arrays``) and never next to the data, which may be
read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "FL_R2SP_DATA"
CACHE_ENV = "FL_R2SP_CACHE"


def user_cache_root() -> Path:
    """Per-user cache root: ``$XDG_CACHE_HOME/fl_r2sp`` or ``~/.cache/fl_r2sp``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "fl_r2sp"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """Return the directory in which data files are looked up.

    Parameters
    ----------
    data_dir : str or Path or None, default None
        Explicit directory; ``None`` or ``""`` falls back to ``$FL_R2SP_DATA``
        and then to :func:`user_cache_root`.

    Returns
    -------
    Path
        The directory, with ``~`` expanded (it need not exist).
    """
    if data_dir is not None and str(data_dir) != "":
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_ENV, "")
    if env:
        return Path(env).expanduser()
    return user_cache_root()


def cache_dir() -> Path:
    """Directory for decoded ``.npy`` caches (created on demand).

    ``$FL_R2SP_CACHE`` if set (tests point it at a temporary folder), else
    ``<user cache root>/arrays``.
    """
    env = os.environ.get(CACHE_ENV, "")
    path = Path(env).expanduser() if env else user_cache_root() / "arrays"
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_data_dir() -> Path | None:
    """``../shared/data`` beside the repository root, or ``None`` if absent.

    Only for tests, benchmarks and experiments run from a checkout; the
    package itself never requires this directory.
    """
    # paths.py -> datasets -> fl_r2sp -> repository root -> its parent.
    candidate = Path(__file__).resolve().parents[3] / "shared" / "data"
    return candidate if candidate.is_dir() else None


def first_existing(candidates: list[Path]) -> Path | None:
    """First path of ``candidates`` that exists, else ``None``."""
    for path in candidates:
        if path.exists():
            return path
    return None


def missing_files_error(what: str, candidates: list[Path], hint: str = "") -> FileNotFoundError:
    """Build a ``FileNotFoundError`` that lists where ``what`` was looked for."""
    listed = "\n  ".join(str(p) for p in candidates)
    msg = (
        f"{what} not found; looked for:\n  {listed}\n"
        f"Put the files there, or point the loader at the folder that holds them "
        f"(data_dir argument / run-config 'data-dir', or ${DATA_ENV})."
    )
    return FileNotFoundError(msg + (f" {hint}" if hint else ""))

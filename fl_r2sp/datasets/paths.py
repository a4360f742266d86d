"""Where data files are read from and where decoded arrays are cached.

Resolution order of the data directory (first that applies wins):

1. an explicit ``data_dir`` argument, i.e. the run-config key ``data-dir``
   (``""`` counts as "not given", so an empty run-config value falls through),
2. the environment variable ``FL_R2SP_DATA``,
3. ``data/`` at the root of the project checkout, if that folder exists (it is
   git-ignored: put or link the data sets there),
4. last resort, only when none of the above is given or exists:
   ``../shared/data`` beside the checkout, if that folder exists (a read-only
   data folder that some machines keep next to their checkouts; an optional
   fallback, never required),
5. a per-user cache directory: ``$XDG_CACHE_HOME/fl_r2sp`` or
   ``~/.cache/fl_r2sp`` (also where ``download=true`` puts CIFAR-10).

Steps 3 and 4 apply only when the package runs from a checkout (the folder
above ``fl_r2sp/`` holds ``pyproject.toml``), never from an installed wheel.

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
        Explicit directory; ``None`` or ``""`` falls back to ``$FL_R2SP_DATA``,
        then to :func:`project_data_dir`, then to :func:`shared_data_dir`, and
        then to :func:`user_cache_root` (see the module docstring).

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
    for found in (project_data_dir(), shared_data_dir()):
        if found is not None:
            return found
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


def checkout_root() -> Path | None:
    """Root of the project checkout this package runs from, or ``None`` (installed wheel).

    A checkout is recognised by the ``pyproject.toml`` next to ``fl_r2sp/``.
    """
    # paths.py -> datasets -> fl_r2sp -> repository root.
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def project_data_dir() -> Path | None:
    """``data/`` at the root of the checkout, or ``None`` if absent or not a checkout."""
    root = checkout_root()
    candidate = root / "data" if root is not None else None
    return candidate if candidate is not None and candidate.is_dir() else None


def shared_data_dir() -> Path | None:
    """The last-resort fallback ``../shared/data`` beside the checkout, or ``None`` if absent.

    Optional: nothing requires it. :func:`resolve_data_dir` uses it only when no
    ``data-dir``, no ``$FL_R2SP_DATA`` and no project ``data/`` folder is there.
    """
    root = checkout_root()
    candidate = root.parent / "shared" / "data" if root is not None else None
    return candidate if candidate is not None and candidate.is_dir() else None


def missing_files_error(what: str, candidates: list[Path], hint: str = "") -> FileNotFoundError:
    """Build a ``FileNotFoundError`` that lists where ``what`` was looked for."""
    listed = "\n  ".join(str(p) for p in candidates)
    msg = (
        f"{what} not found; looked for:\n  {listed}\n"
        f"Put the files there, or point the loader at the folder that holds them "
        f"(data_dir argument / run-config 'data-dir', ${DATA_ENV}, or a data/ folder at "
        f"the project root)."
    )
    return FileNotFoundError(msg + (f" {hint}" if hint else ""))

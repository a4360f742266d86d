"""Which code computed a cached run, and whether a run of older code may be reused.

A cached run (``<out>/_runs/<label>-s<seed>-<key>.json``) is keyed by its
configuration *and* the code that computed it:

* :func:`code_version` hashes the engine's sources, ``fl_r2sp/**/*.py``
  without ``fl_r2sp/cluster/`` (the FL runs never import the cluster mode),
  each in the canonical form of :mod:`experiments.common.code_canon` (named by
  its current module name, so a pure move of files keeps the version; comments,
  formatting and docstrings do not count), together with :data:`RUN_SCHEMA`;
  any other change to the engine gives a new version, so a result computed
  before a behaviour change is never reused silently;
* :func:`run_key` mixes it into the configuration key;
* versions computed by the hash of file paths used until the layout move are
  the same code as a current version where :mod:`experiments.common.same_code`
  says so (checked by rebuilding both trees from git): the cache reuses such
  runs as runs of the current code, and the report counts them as the code the
  item ran with.

Rerunning everything after each change is expensive (real-training runs take
minutes to an hour), so older runs can be reused *explicitly*:
``FL_R2SP_REUSE_RUNS=any`` (or an item script's ``--reuse-runs any``) takes,
when no run of the current code exists, the newest run of the same
configuration computed by any code, including runs cached before versions
were recorded (code ``unversioned``). Every item writes the code versions
its runs came from to ``<out>/<item>/provenance.json``, which the report
prints, so a reused run is always visible.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from experiments.common.code_canon import canonical_sources
from experiments.common.same_code import aliases_of, same_code

#: Bump when the cached record's layout or meaning changes without a code change.
RUN_SCHEMA = 2
#: Environment variable choosing which cached runs may be reused.
REUSE_ENV = "FL_R2SP_REUSE_RUNS"
#: Reuse modes: only runs of the current code, or any code's as a fallback.
REUSE_MODES = ("current", "any")
#: Code version of runs cached before versions were recorded.
UNVERSIONED = "unversioned"

_ENGINE = Path(__file__).resolve().parents[2] / "fl_r2sp"
_SKIP = ("cluster",)


@lru_cache(maxsize=4)
def code_version(root: Path = _ENGINE, skip: tuple[str, ...] = _SKIP) -> str:
    """10-hex version of the engine sources under ``root`` (default: the ``fl_r2sp`` package),
    leaving out its top-level folders ``skip`` (default: ``cluster``, which the FL runs never
    import; the cluster items pass ``()``): the canonical sources of
    :func:`experiments.common.code_canon.canonical_sources`, which a pure move of files does
    not change."""
    h = hashlib.sha256(f"schema {RUN_SCHEMA}\n".encode())
    for name, text in canonical_sources(root, skip):
        h.update(f"{name}\n".encode())
        h.update(text.encode())
    return h.hexdigest()[:10]


def current_versions(skip: tuple[str, ...] = _SKIP) -> tuple[str, ...]:
    """The current code version first, then the older versions of the same code
    (:func:`experiments.common.same_code.aliases_of`): the versions whose runs count as runs
    of the current code."""
    now = code_version(skip=skip)
    return (now, *aliases_of(now))


def run_key(config_key: str, code: str | None) -> str:
    """File key of a run: the config key alone for unversioned runs, else mixed with ``code``."""
    if code is None or code == UNVERSIONED:
        return config_key
    return hashlib.sha256(f"{config_key}:{code}".encode()).hexdigest()[:12]


def reuse_mode(flag: str | None = None) -> str:
    """The reuse mode: ``flag`` if given, else ``$FL_R2SP_REUSE_RUNS``, else ``current``."""
    mode = flag or os.environ.get(REUSE_ENV) or "current"
    if mode not in REUSE_MODES:
        raise ValueError(f"{REUSE_ENV}={mode!r} is not one of {', '.join(REUSE_MODES)}")
    return mode


def older_run(
    runs: Path, label: str, seed: int, config_key: str, key_of: Callable[[dict[str, Any]], str]
) -> Path | None:
    """Newest cached run of ``label``/``seed`` whose configuration has this key, any code.

    The key of each candidate is recomputed from its stored full configuration by
    ``key_of`` (the current :func:`experiments.common.run_cache.config_key`), not read from the
    record: a key leaves out values at their defaults, so a changed default changes the
    key of a run that set that value explicitly.
    """
    found: list[tuple[float, Path]] = []
    for path in runs.glob(f"{label}-s{seed}-*.json"):
        if path.name.count(".") != 1:  # jobs/records side files
            continue
        rec = json.loads(path.read_text())
        if rec.get("label") == label and key_of(rec["config"]) == config_key:
            found.append((float(rec.get("computed_at_unix", 0.0)), path))
    return max(found)[1] if found else None


@lru_cache(maxsize=2)
def git_state(paths: tuple[str, ...] = ("fl_r2sp",)) -> tuple[str | None, bool | None]:
    """(HEAD commit, whether ``paths`` differ from it) of the engine's checkout.

    ``paths`` are relative to the checkout's root (default: ``fl_r2sp``, the engine).
    ``(None, None)`` outside a git checkout or without git; a hint for readers (which commit
    a code version was), never part of a key.
    """
    root = _ENGINE.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", *paths],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head, bool(dirty.strip())


def stamp(rec: dict[str, Any], config_key: str, seconds: float) -> dict[str, Any]:
    """``rec`` with its provenance fields: config key, code version (and the git commit it
    was taken from, if dirty), schema, when, how long."""
    commit, dirty = git_state()
    rec.update(
        config_key=config_key,
        git_commit=commit,
        git_dirty=dirty,
        code_version=code_version(),
        schema=RUN_SCHEMA,
        computed_at=time.strftime("%Y-%m-%d %H:%M"),
        computed_at_unix=time.time(),
        run_seconds=seconds,
    )
    return rec


#: Runs an item script used, in order: what :func:`write_provenance` reports.
_USED: list[dict[str, Any]] = []


def note_used(rec: dict[str, Any]) -> None:
    """Remember that the running item used cached or fresh run ``rec``."""
    code = rec.get("code_version", UNVERSIONED)
    _USED.append(
        {
            "label": rec["label"],
            "seed": rec["seed"],
            "code_version": code,
            "git_commit": rec.get("git_commit"),
            "git_dirty": rec.get("git_dirty"),
            "current": same_code(code, code_version()),
            "computed_at": rec.get("computed_at"),
            "run_seconds": rec.get("run_seconds"),
        }
    )


def write_provenance(item_dir: Path) -> Path:
    """Write ``provenance.json``: the current code version and each used run's."""
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    for row in _USED:
        seen[(row["label"], row["seed"])] = row
    path = item_dir / "provenance.json"
    path.write_text(
        json.dumps(
            {
                "code_version": code_version(),
                "schema": RUN_SCHEMA,
                "runs": sorted(seen.values(), key=lambda r: (r["label"], r["seed"])),
            },
            indent=2,
        )
    )
    return path


def uncommitted(provenance: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of an item's ``provenance.json`` that no commit alone computed: made with
    uncommitted edits of ``fl_r2sp/`` (``git_dirty``) or outside a git checkout (no commit)."""
    return [r for r in provenance.get("runs", []) if r.get("git_dirty") or not r.get("git_commit")]


def summarise(provenance: dict[str, Any]) -> str:
    """One sentence: how many runs each code version computed, and at which commit.

    Each version is marked as the code the item ran with or older code it reused; the engine
    code at report time is left out, so a report rebuilds the same from the same records.
    """
    counts: dict[str, int] = {}
    commits: dict[str, str] = {}
    for row in provenance.get("runs", []):
        counts[row["code_version"]] = counts.get(row["code_version"], 0) + 1
        if row.get("git_commit"):
            dirty = " + uncommitted edits" if row.get("git_dirty") else ""
            commits[row["code_version"]] = f", commit {row['git_commit'][:7]}{dirty}"
    if not counts:
        return "No cached runs."
    item = provenance.get("code_version")

    def what(code: str) -> str:
        if code == item:
            return "the code the item ran with"
        if item is not None and same_code(code, item):
            return f"the code the item ran with, as `{code}` before the layout move"
        return "older code, reused"

    parts = [
        f"{n} by code `{code}` ({what(code)}{commits.get(code, '')})"
        for code, n in sorted(counts.items(), key=lambda kv: (kv[0] != item, kv[0]))
    ]
    return "Runs: " + "; ".join(parts) + "."

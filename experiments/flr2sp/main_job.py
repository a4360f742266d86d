"""Record one run of the main job (``bash scripts/main.sh``: ``flwr run .`` on digits).

The README quotes the main job's printed summary; this turns one run's output into a
committed record, ``<out>/main_job/summary.json`` (the run-summary lines as printed, and their
values by name) with ``provenance.json`` (commit, whether ``fl_r2sp/`` had uncommitted edits,
code version, wall time), from which ``python -m experiments.report`` writes the README's
``main-job-output`` block (:mod:`experiments.blocks`).

Run: ``python -m experiments.flr2sp.main_job`` (runs ``bash scripts/main.sh`` in the
checkout, 1-4 min) or ``python -m experiments.flr2sp.main_job --log LOG --commit SHA
--seconds S`` (a captured output of the same commands, run from a clean checkout of ``SHA``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.common import provenance
from experiments.common.run_cache import write_json

__all__ = ["ITEM", "main", "parse_output"]

ITEM = "main_job"
#: Terminal colour codes Flower's logger prints.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A summary line: ``  name   : value``.
_FIELD = re.compile(r"^  (\S.*?)\s*: (.*)$")
#: How long the main job may take before the recorder gives up (seconds).
TIMEOUT_S = 1800


def parse_output(text: str) -> dict[str, Any]:
    """The run-summary lines of the main job's output and their values by name.

    Raises
    ------
    ValueError
        When the output holds no ``run summary`` (the run failed or the log is another's).
    """
    lines = [_ANSI.sub("", ln).rstrip() for ln in text.splitlines()]
    lines = [re.sub(r"^INFO\s*(fl_r2sp)?:\s*", "", ln) for ln in lines]
    if "run summary" not in lines:
        raise ValueError("no 'run summary' in the main job's output: did the run finish?")
    start = lines.index("run summary")
    block = [start]
    for i in range(start + 1, len(lines)):
        if not _FIELD.match(lines[i]):
            break
        block.append(i)
    fields = {m.group(1): m.group(2) for i in block[1:] if (m := _FIELD.match(lines[i]))}
    progress = [ln for ln in lines[:start] if ln.startswith("[") and " update " in ln]
    tail = [ln for ln in lines[block[-1] + 1 :] if ln.startswith("updates:")]
    return {
        "lines": [lines[i] for i in block],
        "last_progress": progress[-1] if progress else None,
        "admission": tail[0] if tail else None,
        "fields": fields,
    }


def _run_main_job(root: Path) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        ["bash", "scripts/main.sh"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if done.returncode != 0:
        raise SystemExit(f"scripts/main.sh failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout + done.stderr, time.perf_counter() - started


def record(
    out: Path, text: str, commit: str | None, dirty: bool | None, seconds: float, at: float
) -> Path:
    """Write ``<out>/main_job/{summary.json,provenance.json}`` from the output ``text`` of a
    run that ended at ``at`` (Unix time) after ``seconds``."""
    parsed = parse_output(text)
    d = out / ITEM
    write_json(
        d / "summary.json",
        {"item": ITEM, "scale": "main-job", "seeds": [0], "command": "bash scripts/main.sh",
         **parsed},
    )  # fmt: skip
    run = {"label": "main-job", "seed": 0, "code_version": provenance.code_version(),
           "git_commit": commit, "git_dirty": dirty,
           "computed_at": time.strftime("%Y-%m-%d %H:%M", time.gmtime(at)),
           "run_seconds": round(seconds, 1)}  # fmt: skip
    write_json(d / "provenance.json", {"code_version": run["code_version"], "runs": [run]})
    return d


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="records/results", help="results root")
    parser.add_argument("--log", default="", help="a captured output instead of running")
    parser.add_argument("--commit", default="", help="with --log: the clean commit it ran")
    parser.add_argument("--seconds", type=float, default=0.0, help="with --log: its wall time")
    ns = parser.parse_args(argv)
    commit: str | None
    dirty: bool | None
    if ns.log:
        if not ns.commit:
            parser.error("--log needs --commit (the clean checkout the output came from)")
        log = Path(ns.log)
        text, commit, dirty, seconds = log.read_text(), ns.commit, False, ns.seconds
        at = log.stat().st_mtime
    else:
        root = Path(__file__).resolve().parents[2]
        commit, dirty = provenance.git_state()
        text, seconds = _run_main_job(root)
        at = time.time()
    print(f"wrote {record(Path(ns.out), text, commit, dirty, seconds, at)}")


if __name__ == "__main__":
    main()

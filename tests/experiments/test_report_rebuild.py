"""REPORT.md rebuilds byte for byte from the committed records: no training, no data set.

A fresh clone holds the compact records under ``records/results/`` (each item's
``summary.json``, ``summary.csv``, ``runs.csv``, ``provenance.json``) and the cluster studies'
published files under ``records/report/``; ``python -m experiments.report`` must turn them
into the committed ``REPORT.md`` exactly.
"""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
from pathlib import Path

from experiments.flr2sp.report.sections import flr2sp_lines
from experiments.report import build
from tests.paths import REPO

RESULTS = REPO / "records" / "results"
#: The committed records stay small: summaries and tables, never run folders or weights.
RECORDS_LIMIT_BYTES = 5_000_000


def _committed_records() -> list[Path]:
    """The files under ``records/results/`` that git tracks (what a fresh clone has)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "records/results"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [REPO / p for p in listed.split("\0") if p]


def test_report_rebuilds_byte_for_byte_from_the_committed_records(tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    for path in _committed_records():  # untracked local runs must not change the rebuild
        dest = out / path.relative_to(RESULTS)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    text = build(out, tmp_path / "dest")
    committed = (REPO / "REPORT.md").read_text()
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            text.splitlines(keepends=True),
            "committed REPORT.md",
            "rebuilt",
            n=1,
        )
    )
    assert text == committed, f"regenerate with `python -m experiments.report`:\n{diff[:4000]}"


def test_committed_records_are_compact() -> None:
    names = {"summary.json", "summary.csv", "runs.csv", "provenance.json"}
    records = _committed_records()
    assert all(p.name in names and p.parent.parent == RESULTS for p in records)
    assert sum(p.stat().st_size for p in records) <= RECORDS_LIMIT_BYTES


def _record(out: Path, item: str, runs: list[dict] | None) -> None:
    d = out / item
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"item": item, "scale": "laptop", "seeds": [0]}))
    if runs is not None:
        (d / "provenance.json").write_text(json.dumps({"code_version": "c0", "runs": runs}))


def test_records_of_uncommitted_edits_or_without_provenance_show_as_not_run(
    tmp_path: Path,
) -> None:
    run = {"label": "t-bsp", "seed": 0, "code_version": "c0", "git_commit": "abc1234"}
    _record(tmp_path, "fig18", [{**run, "git_dirty": False}, {**run, "git_dirty": True}])
    _record(tmp_path, "fig17", [{**run, "git_commit": None}])
    _record(tmp_path, "fig16", None)
    keep = tmp_path / "keep"
    keep.mkdir()
    text = "\n".join(flr2sp_lines(tmp_path, keep, tmp_path))
    dirty = "Not run from committed code (1 of its 2 runs were made by uncommitted edits"
    assert dirty in text
    assert "Not run from committed code (1 of its 1 runs" in text
    assert (
        "Not run (its record has no `provenance.json`): `python -m experiments.flr2sp.fig16`"
        in (text)
    )
    assert "Not run (no committed record `table2/summary.json`)" in text
    assert "Recorded: 3 of" in text

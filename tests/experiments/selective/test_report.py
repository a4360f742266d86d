"""The selective-reduce section of REPORT.md: read from the published CSVs, min/median/max."""

from __future__ import annotations

import csv
from pathlib import Path

from experiments.selective.cli import TITLES
from experiments.selective.report import selective_lines, spread_table
from tests.paths import REPO

PUBLISHED = REPO / "records" / "report"


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_spread_table_shows_min_median_max_per_metric() -> None:
    rows = [{"x": "0.5", "scheme": "partial", "trials": "3", "scale_min": "2",
             "scale_median": "2.5", "scale_max": "4", "other_min": "9"}]  # fmt: skip
    assert spread_table(rows, ["scale", "missing"]) == [
        "| x | scheme | trials | scale |",
        "|---|---|---|---|",
        "| 0.5 | partial | 3 | 2 / 2.5 / 4 |",
    ]


def test_section_reads_each_item_and_tallies_its_verdicts(tmp_path: Path) -> None:
    d = tmp_path / "selective" / "fig8"
    _write(d / "runs.csv", [{"x": "0.1", "scheme": "selective", "trials": "20",
                             "sync_time_s_min": "1", "sync_time_s_median": "2",
                             "sync_time_s_max": "3"}])  # fmt: skip
    _write(d / "claims.csv", [{"figure": "Fig. 8", "claim": "a", "ours": "x", "verdict": "holds"},
                              {"figure": "Fig. 8", "claim": "b", "ours": "y",
                               "verdict": "does not hold"}])  # fmt: skip
    (d / "fig8.png").write_bytes(b"")
    text = "\n".join(selective_lines(tmp_path))
    assert "All selective-reduce claims: holds 1, does not hold 1." in text
    assert "| 0.1 | selective | 20 | 1 / 2 / 3 |" in text
    assert "![selective fig8](records/report/selective/fig8/fig8.png)" in text
    assert "Trials per point: 20;" in text
    missing = [item for item in TITLES if item != "fig8"]
    assert text.count("Not published") == len(missing)


def test_the_published_simulations_are_all_in_the_selective_section() -> None:
    text = "\n".join(selective_lines(PUBLISHED))
    for item, title in TITLES.items():
        assert f"### {title}" in text
        with open(PUBLISHED / "selective" / item / "runs.csv", newline="") as fh:
            runs = list(csv.DictReader(fh))
        assert {r["trials"] for r in runs} == {"20"}  # every point: 20 trials
    assert "Not published" not in text
    assert "Verdict rules (stated before running)" in text

"""Quoting the previous report: its tables, its default reference, and the side-by-side."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.flr2sp.previous_report import comparison_lines, default_reference, first_table

OLD = """# report

## Fig. 15 — final accuracy

Scale `laptop`.

| model | scheme | final acc | best acc | converged at (s) | seeds |
|---|---|---|---|---|---|
| cnn | bsp | 0.355 ± 0.015 | 0.373 ± 0.029 | 54 ± 7 | 3 |
| cnn | asp | 0.382 ± 0.008 | 0.383 ± 0.008 | n/a | 3 |

| second | table |
|---|---|

## Fig. 16 — next
"""


def test_first_table_of_a_section() -> None:
    t = first_table(OLD, "## Fig. 15")
    assert t is not None
    assert t["header"] == ["model", "scheme", "final acc", "best acc", "converged at (s)", "seeds"]
    assert [r[1] for r in t["rows"]] == ["bsp", "asp"]
    assert first_table(OLD, "## Fig. 16") is None
    assert first_table(OLD, "## Table IV") is None


def test_default_reference_of_a_config_source() -> None:
    src = 'cosine_reference: CosineReference = _f("group", "Reference delta.")'
    assert default_reference(src) == "group"
    assert default_reference("nothing here") is None


def test_comparison_puts_new_figures_beside_quoted_cells(tmp_path: Path) -> None:
    quoted = dict(
        commit="abc1234",
        date="2026-01-01",
        default_cosine_reference="group",
        fig15=first_table(OLD, "## Fig. 15"),
    )
    (tmp_path / "previous_laptop.json").write_text(json.dumps(quoted))
    new = dict(
        table=[
            dict(scheme="bsp", n=1, final_accuracy_mean=0.3494, final_accuracy_std=0.0)
            | dict(converged_at_mean=47.7, converged_at_std=0.0),
            dict(scheme="fedbuff", n=2, final_accuracy_mean=0.2, final_accuracy_std=0.1)
            | dict(converged_at_mean=None),
        ]
    )
    lines = comparison_lines("fig15", new, tmp_path)
    assert "commit abc1234" in lines[0] and "`group`" in lines[0]
    assert lines[4:] == [
        "| bsp | 0.349 ± 0.000 | 0.355 ± 0.015 | 48 ± 0 | 54 ± 7 | 1 | 3 |",
        "| fedbuff | 0.200 ± 0.100 | n/a | n/a | n/a | 2 | n/a |",
        "| asp | n/a | 0.382 ± 0.008 | n/a | n/a | n/a | 3 |",
    ]
    assert comparison_lines("table4", new, tmp_path) == []

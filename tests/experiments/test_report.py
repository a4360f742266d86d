"""The report's prose holds no typed figure, and its verdict rules work as stated."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from experiments.common import verdicts
from tests.paths import REPO

HERE = REPO / "experiments"
#: A number standing alone ("0.38", "12", "3x"); digits inside names (fl_r2sp, table4,
#: paper-ec2, R²SP) are not figures.
FIGURE = re.compile(
    r"(?<![A-Za-z0-9_\-.])[0-9]+(?:[.,][0-9]+)?(?![A-Za-z0-9_])|"
    r"(?<![A-Za-z0-9_\-.])[0-9]+x"
)


def _literal_texts(path: Path, tables: bool = True) -> list[str]:
    """Every string literal of a module, f-string parts included, format specs left out;
    ``tables=False`` leaves out the table functions (``sec_*``, ``*_table``: column heads may
    name a setting such as "comm 128") and module constants, keeping the docstring and prose."""
    tree = ast.parse(path.read_text())
    roots: list[ast.AST] = [tree]
    if not tables:
        roots = [tree.body[0]] + [
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef)
            and not n.name.startswith("sec_")
            and not n.name.endswith("_table")
        ]
    nodes = [c for root in roots for c in ast.walk(root)]
    specs = [n.format_spec for n in nodes if isinstance(n, ast.FormattedValue) and n.format_spec]
    skip = {id(c) for spec in specs for c in ast.walk(spec)}
    return [
        n.value
        for n in nodes
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
    ]


@pytest.mark.parametrize(
    ("name", "tables"),
    [
        ("flr2sp/report/method.py", True),
        ("flr2sp/report/formats.py", True),
        ("flr2sp/report/timing.py", False),
        ("flr2sp/report/training.py", False),
        ("flr2sp/report/filter_help.py", False),
        ("r2sp_cluster/report.py", True),
        ("selective/report.py", True),
        ("dssync/report.py", True),
        ("osp/report.py", True),
    ],
)
def test_report_prose_has_no_typed_figures(name: str, tables: bool) -> None:
    # Docstrings may not hold digits either: the rule is simple to check and to keep.
    typed = [t for t in _literal_texts(HERE / name, tables) if FIGURE.search(t)]
    assert typed == []
    assert FIGURE.search("pushes of 0.38 s") and FIGURE.search("about 3x")
    assert not FIGURE.search("fl_r2sp table4 paper-ec2 FL-R²SP outlier_top_over_097")


def test_remaining_share_rule() -> None:
    # The example: a 91.5% cut against the paper's 76.5% leaves 0.36x its remainder.
    assert verdicts.remaining_ratio(0.915, 0.765) == pytest.approx(0.085 / 0.235)
    assert "not reproduced" in verdicts.remaining_verdict(0.915, 0.765)
    assert "(reproduced)" in verdicts.remaining_verdict(0.80, 0.765)  # 0.20 / 0.235 = 0.85
    assert verdicts.remaining_verdict(None, 0.5) == "n/a"


def test_fitted_cells_are_never_reproductions() -> None:
    assert verdicts.is_fitted("table5", "bsp_pull_s", "cnn", "fair")
    assert not verdicts.is_fitted("table5", "bsp_pull_s", "lstm", "fair")
    assert verdicts.partly_fitted("table5", "speedup", "resnet20", "fair")
    assert not verdicts.partly_fitted("table5", "speedup", "lstm", "fair")
    assert verdicts.ratio_verdict(1.0, 1.0, fitted=True) == (
        "1.00x (fitted: a calibration input, not a reproduction)"
    )
    assert verdicts.ratio_verdict(1.2, 1.0) == "1.20x (reproduced)"
    assert verdicts.ratio_verdict(1.6, 1.0) == "1.60x (**not reproduced**)"
    assert (
        verdicts.ratio_verdict(1.2, 1.0, partly=True) == "1.20x (within band, from fitted inputs)"
    )

"""The report's prose holds no typed figure (the verdict rules: ``common/test_verdicts.py``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

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
        ("flr2sp/report/table4.py", False),
        ("flr2sp/report/fig15.py", False),
        ("flr2sp/report/outliers.py", False),
        ("flr2sp/report/outliers_scoring.py", False),
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

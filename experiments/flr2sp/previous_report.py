"""The previous report's laptop Fig. 15 and outlier tables, quoted beside the new ones.

The laptop runs behind the committed report of an older commit (computed with
the earlier default ``cosine-reference = "group"``) are not in any cache
here, so their figures cannot be recomputed. This script *quotes* them: it
reads ``REPORT.md`` and ``fl_r2sp/fl/config.py`` as they were at
``--commit`` (``git show``), takes the first table of the Fig. 15 and the
outlier sections, and the default cosine reference of that commit, and
writes them to a committed JSON file the report reads::

    python -m experiments.flr2sp.previous_report --commit 90a0624 \\
        --dest records/report/previous_laptop.json

The report prints these cells verbatim and labels them as quoted from that
commit; no figure is typed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from experiments.flr2sp.report.formats import ms, table

#: Report section (title prefix) -> the key the JSON stores its first table under.
SECTIONS = {"## Fig. 15": "fig15", "## Outlier filter": "outliers"}


def git_show(commit: str, path: str) -> str:
    """``path`` as it was at ``commit`` (raises CalledProcessError naming both if absent)."""
    return subprocess.run(
        ["git", "show", f"{commit}:{path}"], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def first_table(text: str, title: str) -> dict[str, list] | None:
    """Header and rows of the first Markdown table in the section whose title starts with
    ``title`` (None when the section or its table is missing)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(title)), None)
    if start is None:
        return None
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    if len(rows) < 2:
        return None
    return {"header": rows[0], "rows": rows[2:]}  # rows[1] is the |---| line


def default_reference(config_source: str) -> str | None:
    """The default of ``cosine_reference`` in a ``fl_r2sp/fl/config.py`` source."""
    m = re.search(r"cosine_reference:\s*\w+\s*=\s*_f\(\s*\"([^\"]+)\"", config_source)
    return None if m is None else m[1]


def quote(commit: str) -> dict[str, Any]:
    """Everything the report quotes from ``commit``."""
    report = git_show(commit, "experiments/REPORT.md")
    date = subprocess.run(
        ["git", "show", "-s", "--format=%h %ad", "--date=short", commit],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return {
        "commit": date[0],
        "date": date[1],
        "default_cosine_reference": default_reference(git_show(commit, "fl_r2sp/config.py")),
        **{key: first_table(report, title) for title, key in SECTIONS.items()},
    }


#: Item -> (key column, [(old column, new metric, decimals; None = the seed count)]).
COMPARE: dict[str, tuple[str, list[tuple[str, str, int | None]]]] = {
    "fig15": (
        "scheme",
        [
            ("final acc", "final_accuracy", 3),
            ("converged at (s)", "converged_at", 0),
            ("seeds", "n", None),
        ],
    ),
    "outliers": (
        "case",
        [
            ("precision", "precision", 2),
            ("recall", "recall", 2),
            ("blacklisted", "num_blacklisted", 1),
            ("false-positive rate", "false_positive_rate", 3),
            ("final acc", "final_accuracy", 3),
        ],
    ),
}


def comparison_lines(item: str, d: dict[str, Any], report_dir: Path) -> list[str]:
    """The item's new figures (``d``, its summary) beside the quoted previous ones, per row
    key; empty when nothing was quoted for the item."""
    from fl_r2sp.fl.config import RunConfig

    path = report_dir / "previous_laptop.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    quoted, spec = old.get(item), COMPARE.get(item)
    if not quoted or spec is None:
        return []
    key, cols = spec
    at = {name: i for i, name in enumerate(quoted["header"])}
    before = {r[at[key]]: r for r in quoted["rows"]}
    now = {r[key]: r for r in d["table"]}
    rows = []
    for k in dict.fromkeys([*now, *before]):
        cells = [k]
        for name, metric, digits in cols:
            new = now.get(k)
            mine = (
                "n/a"
                if new is None
                else str(new["n"])
                if digits is None
                else ms(new, metric, digits)
            )
            cells += [mine, before[k][at[name]] if k in before and name in at else "n/a"]
        rows.append(cells)
    header = [key] + [f"{name} ({when})" for name, *_ in cols for when in ("now", "previous")]
    return [
        f"Now (default cosine reference `{RunConfig().cosine_reference}`) beside the previous "
        f"report (default `{old['default_cosine_reference']}`): its cells are quoted verbatim "
        f"from the committed report of commit {old['commit']} ({old['date']}, "
        "`experiments/flr2sp/previous_report.py`); its runs are not in this cache, so they are not "
        "recomputed.",
        "",
        *table(header, rows),
    ]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commit", required=True, help="commit of the previous report")
    p.add_argument("--dest", default="records/report/previous_laptop.json")
    ns = p.parse_args(argv)
    data = quote(ns.commit)
    Path(ns.dest).write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {ns.dest} (commit {data['commit']}, default {data['default_cosine_reference']})")


if __name__ == "__main__":
    main()

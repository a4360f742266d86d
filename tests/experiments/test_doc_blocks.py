"""Generated blocks: the docs quote no result figure that the records do not give.

REPORT.md rebuilds from the records (``test_report_rebuild.py``); each block of the documents
must equal what :mod:`experiments.blocks` renders from that REPORT.md and the records, so a
stale figure in a block fails here. The marker mechanism itself is tested on made-up Markdown.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from experiments.blocks import BLOCKS, DOCS, render, update_docs
from experiments.common.doc_blocks import BlockError, block_names, fill, stale
from tests.paths import REPO

RECORDS = REPO / "records" / "results"


def _render(name: str) -> list[str]:
    return {"a": ["new a"], "b": ["b1", "b2"]}.get(name) or _unknown(name)


def _unknown(name: str) -> list[str]:
    raise BlockError(f"unknown {name}")


def _doc(*names: str, body: str = "old") -> str:
    parts = ["# Title", "Prose with 0.58 outside any block stays."]
    for n in names:
        parts += [f"<!-- BEGIN generated: {n} -->", body, f"<!-- END generated: {n} -->"]
    return "\n".join([*parts, "tail", ""])


def test_fill_rewrites_only_between_the_markers() -> None:
    text = _doc("a", "b")
    out = fill(text, _render)
    assert out == text.replace("old\n<!-- END generated: a", "new a\n<!-- END generated: a")\
        .replace("old\n<!-- END generated: b", "b1\nb2\n<!-- END generated: b")  # fmt: skip
    assert stale(text, _render) == ["a", "b"] and stale(out, _render) == []
    assert block_names(out) == ["a", "b"] and fill("no markers\n", _render) == "no markers\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<!-- BEGIN generated: a -->\nx\n", "never closed"),
        ("x\n<!-- END generated: a -->\n", "without its BEGIN"),
        ("<!-- BEGIN generated: a -->\n<!-- BEGIN generated: b -->\n", "opens inside"),
        (_doc("a", "a"), "appears twice"),
        (_doc("zzz"), "unknown zzz"),
    ],
)
def test_malformed_or_unknown_blocks_are_refused(text: str, problem: str) -> None:
    with pytest.raises(BlockError, match=problem):
        fill(text, _render, "doc.md")


def test_every_block_renders_from_the_committed_records() -> None:
    report = (REPO / "REPORT.md").read_text()
    for name in BLOCKS:
        assert render(name, report, RECORDS), name


@pytest.mark.parametrize("doc", DOCS)
def test_the_documents_blocks_equal_what_the_records_give(doc: str) -> None:
    path = REPO / doc
    if not path.exists():
        pytest.skip(f"{doc} is absent")
    report = (REPO / "REPORT.md").read_text()
    text = path.read_text()
    bad = stale(text, lambda n: render(n, report, RECORDS), doc)
    assert not bad, f"{doc}: stale generated blocks {bad}: run `python -m experiments.report`"


def test_no_document_outside_docs_has_a_block() -> None:
    # A block in a file the report does not rewrite would never be refreshed, and its test
    # would never run.
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    outside = [
        rel
        for rel in listed.stdout.split()
        if rel not in DOCS and (REPO / rel).exists() and block_names((REPO / rel).read_text(), rel)
    ]
    assert not outside, f"generated blocks outside experiments.blocks.DOCS: {outside}"


def test_a_changed_record_changes_its_block(tmp_path: Path) -> None:
    records = tmp_path / "results"
    (records / "main_job").mkdir(parents=True)
    for name in ("summary.json", "provenance.json"):
        (records / "main_job" / name).write_text((RECORDS / "main_job" / name).read_text())
    doc = _doc("main-job-output")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text(doc)
    report = (REPO / "REPORT.md").read_text()
    assert update_docs(root, report, records, ["README.md"]) == [root / "README.md"]
    first = (root / "README.md").read_text()
    assert "final accuracy" in first and update_docs(root, report, records, ["README.md"]) == []
    rec = json.loads((records / "main_job" / "summary.json").read_text())
    rec["lines"] = [ln.replace("0.8663", "0.1234") for ln in rec["lines"]]
    rec["last_progress"] = rec["last_progress"].replace("0.8663", "0.1234")
    (records / "main_job" / "summary.json").write_text(json.dumps(rec))
    update_docs(root, report, records, ["README.md"])
    assert (
        "0.1234" in (root / "README.md").read_text()
        and "0.8663" not in (root / "README.md").read_text()
    )


def test_a_quote_of_a_missing_section_fails() -> None:
    with pytest.raises(BlockError, match="no section"):
        render("table4", "# Report without sections\n", RECORDS)


def test_the_robustness_block_gives_the_table_and_the_code_that_made_it(tmp_path: Path) -> None:
    assert "Not on record yet" in render("robustness-table", "", tmp_path)[0]
    item = tmp_path / "robustness"
    item.mkdir()
    table = "| attack | mean |\n|---|---|\n| none | 0.872 / 0.0 |\n"
    summary = {"item": "robustness", "scale": "laptop", "seeds": [0, 1], "table_md": table}
    (item / "summary.json").write_text(json.dumps(summary))
    run = {"label": "mean-none-0", "code_version": "abc", "git_commit": "1234567890"}
    runs = [{**run, "seed": 0}, {**run, "seed": 1}]
    (item / "provenance.json").write_text(json.dumps({"code_version": "abc", "runs": runs}))
    lines = render("robustness-table", "", tmp_path)
    assert lines[0].startswith("Scale `laptop`, seeds 0, 1; cell = final accuracy")
    assert "Runs: 2 by code `abc` (the code the item ran with, commit 1234567)." in lines[0]
    assert lines[2:5] == table.splitlines()

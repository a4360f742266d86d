"""Every relative link in the project's Markdown files resolves.

A link ``[text](target)``, an image ``![alt](target)`` or a reference definition
``[id]: target`` whose target has no URL scheme must name a file or folder of the
repository (one that git tracks, so a local run folder never makes a link pass), and a
``#anchor`` must name a heading of the Markdown file it points into, by GitHub's slug rules
(lower case; letters, digits, ``_``, ``-`` and spaces kept, spaces turned into ``-``; a
repeated heading gets ``-1``, ``-2`` ...). Links inside fenced code blocks and inline code
are not links and are not checked.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
import unicodedata
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.paths import REPO

#: Folders never searched when git cannot list the tracked files.
_UNTRACKED = {".git", ".venv", ".flwr", "runs", "data", "outputs", ".cache", "node_modules"}

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)\s*=\s*\"([^\"]+)\"", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def tracked_files(root: Path) -> set[str]:
    """Repository-relative paths of the tracked files (every file when git is unavailable)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and not _UNTRACKED & set(p.relative_to(root).parts)
        }
    # Deleted in the working tree but not yet committed: not there for a reader.
    return {name for name in out.decode().split("\0") if name and (root / name).is_file()}


def _prose_lines(text: str, blank_code: bool = True) -> Iterable[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, inline code blanked out if asked."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            blanked = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
            yield number, blanked if blank_code else line


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before the duplicate suffix)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)  # emphasis markers
    kept = (
        ch
        for ch in text.lower()
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a reader can link to in one Markdown file."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    previous = ""
    for _, line in _prose_lines(path.read_text(encoding="utf-8"), blank_code=False):
        found.update(_HTML_ANCHOR.findall(line))
        atx = _ATX.match(line)
        setext = _SETEXT.match(line) if previous.strip() and not atx else None
        heading = atx.group(2) if atx else previous.strip() if setext else None
        previous = "" if setext else line
        if heading is None:
            continue
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(found)


def link_targets(text: str) -> Iterable[tuple[int, str]]:
    """(line number, target) of every link, image and reference definition in prose."""
    for number, line in _prose_lines(text):
        for target in _INLINE_LINK.findall(line):
            yield number, target
        ref = _REF_DEF.match(line)
        if ref:
            yield number, ref.group(1)


def check_link(root: Path, files: set[str], source: str, target: str) -> str | None:
    """Why ``target``, linked from ``source``, does not resolve (None when it does)."""
    if not target or _SCHEME.match(target) or target.startswith("//"):
        return None  # an external URL, or an empty link Markdown renders as text
    path_part, _, anchor = target.partition("#")
    path_part = unquote(path_part)
    if not path_part:
        rel = source
    elif path_part.startswith("/"):  # GitHub: relative to the repository root
        rel = posixpath.normpath(path_part.lstrip("/") or ".")
    else:
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(source), path_part))
    if rel == ".." or rel.startswith("../"):
        return "points outside the repository"
    is_dir = rel == "." or any(name.startswith(rel.rstrip("/") + "/") for name in files)
    if rel not in files and not is_dir:
        return f"no such tracked file or folder: {rel}"
    if (
        anchor
        and rel.endswith(".md")
        and rel in files
        and unquote(anchor) not in anchors(root / rel)
    ):
        return f"no heading with anchor #{anchor} in {rel}"
    return None


def broken_links(root: Path) -> list[str]:
    """``file:line: target: reason`` of every link that does not resolve."""
    files = tracked_files(root)
    problems = []
    for source in sorted(name for name in files if name.endswith(".md")):
        text = (root / source).read_text(encoding="utf-8")
        for number, target in link_targets(text):
            reason = check_link(root, files, source, target)
            if reason:
                problems.append(f"{source}:{number}: {target}: {reason}")
    return problems


def test_every_relative_link_resolves() -> None:
    problems = broken_links(REPO)
    assert not problems, "broken links in Markdown files:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("10. Cluster mode (`fl_r2sp/cluster/`)", "10-cluster-mode-fl_r2spcluster"),
        ("2.7 Rules beside the paper's [ours]", "27-rules-beside-the-papers-ours"),
        ("Fig. 8a: R²SP ~30% faster", "fig-8a-r²sp-30-faster"),
        (
            "Secure deployment (TLS and SuperNode authentication)",
            "secure-deployment-tls-and-supernode-authentication",
        ),
        ("The **bold** and [linked](x.md) words", "the-bold-and-linked-words"),
        ("A `code_span` and <em>HTML</em>", "a-code_span-and-html"),
    ],
)
def test_github_slug(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Title\n\n## Part one\n\n## Part one\n\n### `code` in a heading\n\n"
        "```\n# not a heading\n[x](missing.md)\n```\n",
        encoding="utf-8",
    )
    files = {"docs/a.md", "src/mod.py"}
    ok = [
        "a.md",
        "a.md#part-one",
        "a.md#part-one-1",
        "#title",
        "#code-in-a-heading",
        "../src/",
        "../src/mod.py",
        "https://x.org/y",
    ]
    bad = ["b.md", "a.md#part-two", "#not-a-heading", "../../outside.md", "../src/other.py"]
    assert [check_link(tmp_path, files, "docs/a.md", t) for t in ok] == [None] * len(ok)
    assert all(check_link(tmp_path, files, "docs/a.md", t) for t in bad)
    assert list(link_targets((tmp_path / "docs" / "a.md").read_text())) == []
    assert list(link_targets("see `[x](y.md)` and [z](w.md#q)\n[r]: ../v.md\n")) == [
        (1, "w.md#q"),
        (2, "../v.md"),
    ]

"""Generated blocks in Markdown files: the figures a document quotes, rewritten from records.

A document marks each quoted result with a pair of HTML comments (invisible when rendered)::

    <!-- BEGIN generated: NAME -->
    ...anything; replaced on each rewrite...
    <!-- END generated: NAME -->

:func:`fill` replaces the lines between every pair with what ``render(NAME)`` returns and
leaves the rest of the text byte for byte; :func:`stale` names the blocks whose text differs
from what they would be rewritten to. Works on any Markdown file: a file without markers is
returned unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["BlockError", "block_names", "fill", "stale"]

_MARK = re.compile(r"^<!-- (BEGIN|END) generated: ([A-Za-z0-9_.-]+) -->\s*$")


class BlockError(ValueError):
    """A malformed marker pair (unclosed, unopened, nested, duplicated) or an unknown block."""


def _pairs(lines: list[str], where: str) -> list[tuple[str, int, int]]:
    """(name, index of BEGIN, index of END) of each block, checked."""
    out: list[tuple[str, int, int]] = []
    open_: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        m = _MARK.match(line)
        if not m:
            continue
        kind, name = m.groups()
        if kind == "BEGIN":
            if open_ is not None:
                raise BlockError(f"{where}:{i + 1}: block {name!r} opens inside {open_[0]!r}")
            open_ = (name, i)
        else:
            if open_ is None or open_[0] != name:
                raise BlockError(f"{where}:{i + 1}: END of {name!r} without its BEGIN")
            out.append((name, open_[1], i))
            open_ = None
    if open_ is not None:
        raise BlockError(f"{where}:{open_[1] + 1}: block {open_[0]!r} is never closed")
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        raise BlockError(f"{where}: a block appears twice: {sorted(names)}")
    return out


def block_names(text: str, where: str = "<text>") -> list[str]:
    """Names of the generated blocks of ``text``, in order (``where`` names it in errors)."""
    return [name for name, _, _ in _pairs(text.split("\n"), where)]


def fill(text: str, render: Callable[[str], list[str]], where: str = "<text>") -> str:
    """``text`` with each block's lines replaced by ``render(name)`` (which raises
    :class:`BlockError` for a name it does not know)."""
    lines = text.split("\n")
    out: list[str] = []
    last = 0
    for name, begin, end in _pairs(lines, where):
        out += lines[last : begin + 1]
        out += render(name)
        last = end
    out += lines[last:]
    return "\n".join(out)


def stale(text: str, render: Callable[[str], list[str]], where: str = "<text>") -> list[str]:
    """Names of the blocks of ``text`` that differ from ``render``'s lines."""
    lines = text.split("\n")
    return [
        name for name, begin, end in _pairs(lines, where) if lines[begin + 1 : end] != render(name)
    ]

"""``FL_R2SP_PROGRESS=1`` prints a line per evaluation of an item's real-training run."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments.common.run_cache import PROGRESS_ENV, cached_run, parse_args, show_progress


@pytest.fixture
def fresh_logger() -> Iterator[None]:
    """The ``fl_r2sp`` logger as the item scripts find it (no handler), restored afterwards."""
    logger = logging.getLogger("fl_r2sp")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    logger.handlers.clear()
    yield
    logger.handlers[:], logger.level, logger.propagate = saved


def _run(out: Path, seed: int) -> None:
    args = parse_args("fig15", None, ["--scale", "smoke", "--out", str(out)])
    cached_run(args, "training", "r-bsp-mlp", seed, strategy="bsp", model="mlp")


@pytest.mark.usefixtures("fresh_logger")
def test_progress_lines_are_printed_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    _run(tmp_path, 0)
    assert not re.search(r"\[bsp\] update \d+/\d+", capsys.readouterr().out)
    monkeypatch.setenv(PROGRESS_ENV, "1")
    _run(tmp_path, 1)  # another seed: not cached
    lines = re.findall(r"\[bsp\] update \d+/\d+ .* acc=", capsys.readouterr().out)
    assert len(lines) >= 2  # smoke: 4 rounds, one evaluation each


@pytest.mark.usefixtures("fresh_logger")
def test_a_configured_root_handler_keeps_the_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_parallel`` labels its workers' lines through the root logger: no second handler
    (the lines would lose their label), and an unconfigured logger gets one."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [logging.StreamHandler()])
    level = root.level
    try:
        root.setLevel(logging.INFO)  # setLevel, not an attribute: it clears the level caches
        show_progress()
        assert logging.getLogger("fl_r2sp").handlers == []
        root.setLevel(logging.WARNING)  # the root shows warnings only
        show_progress()
        assert len(logging.getLogger("fl_r2sp").handlers) == 1
    finally:
        root.setLevel(level)

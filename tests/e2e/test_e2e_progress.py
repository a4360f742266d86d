"""The progress watch of the e2e tests: a command that keeps progressing runs to its end, one
that stops is stopped (no timing is asserted: only which of the two happened)."""

from __future__ import annotations

import sys

from tests.e2e.progress import STALLED, run_while_progressing
from tests.paths import REPO

#: Prints three progress lines, then either ends or hangs.
SCRIPT = (
    "import sys, time\n"
    "for i in range(3):\n"
    "    print(f'[fl-r2sp] update {i}', flush=True); time.sleep(0.05)\n"
    "if sys.argv[1] == 'hang':\n"
    "    time.sleep(600)\n"
)


def test_a_progressing_command_runs_to_its_end() -> None:
    code, out = run_while_progressing(
        [sys.executable, "-c", SCRIPT, "end"], REPO, startup=60.0, floor=30.0
    )
    assert code == 0 and out.count("update") == 3


def test_a_command_that_stops_progressing_is_stopped_and_says_so() -> None:
    code, out = run_while_progressing(
        [sys.executable, "-c", SCRIPT, "hang"], REPO, startup=60.0, factor=2.0, floor=0.5
    )
    assert code == STALLED and "[progress watch] stopped: no progress" in out

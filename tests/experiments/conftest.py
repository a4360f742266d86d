"""Each test starts with an empty list of the runs an item used.

:mod:`experiments.common.provenance` keeps the runs an item used in a module-level list until
the item writes its ``provenance.json``; a test that looks a run up without writing would
otherwise leave its fake run in the provenance of the next item run in the same process (a
record whose run has no commit reads as *not run* in the report).
"""

from __future__ import annotations

import pytest

from experiments.common import provenance


@pytest.fixture(autouse=True)
def _fresh_used_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "_USED", [])

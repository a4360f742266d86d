"""A sweep's progress line: runs done of planned, and the time left from the computed runs."""

from __future__ import annotations

import pytest

from experiments.common import eta


def test_the_estimate_is_the_mean_computed_run_times_the_runs_left() -> None:
    eta.plan(5)
    assert eta.count() == "[1/5]"  # cached: no estimate yet
    assert eta.count(600.0) == "[2/5, about 30 min left]"  # 3 left x 10 min
    assert eta.count(1800.0) == "[3/5, about 40 min left]"  # 2 left x 20 min
    eta.count(60.0)
    assert eta.count(60.0) == "[5/5]" and eta.state() == (5, 5, 4)


def test_hours_and_an_unknown_plan() -> None:
    eta.plan(20)
    assert eta.count(1200.0) == "[1/20, about 6 h 20 min left]"
    eta.plan(0)
    assert eta.count(5.0) == "[1]"
    with pytest.raises(ValueError, match="at least 0"):
        eta.plan(-1)

"""StopRule's convergence window: the run converged when its last improvement happened."""

from __future__ import annotations

import math

from fl_r2sp.fl.server.loop_base import StopRule


def test_converged_at_is_the_last_improvement() -> None:
    rule = StopRule(convergence_window=3, tol=0.01)
    # 0.505 and 0.525 gain < tol over the best so far: they do not count as progress.
    evals = [(0.50, 1.0), (0.505, 2.0), (0.52, 3.0), (0.525, 4.0), (0.52, 5.0)]
    assert not any(rule.after_eval(acc, t) for acc, t in evals)
    assert rule.converged_at is None
    assert rule.after_eval(0.529, 6.0)  # third stagnant evaluation since t = 3
    assert rule.converged_at == 3.0


def test_no_improvement_ever_converges_at_the_window_end() -> None:
    rule = StopRule(convergence_window=2)
    assert not rule.after_eval(math.nan, 1.0)  # NaN never beats the best
    assert rule.after_eval(math.nan, 2.0)
    assert rule.converged_at == 2.0


def test_window_off_never_stops() -> None:
    rule = StopRule()
    assert not any(rule.after_eval(0.1, float(t)) for t in range(50))
    assert rule.converged_at is None

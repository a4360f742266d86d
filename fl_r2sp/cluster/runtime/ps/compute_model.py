"""Emulated dedicated devices: a worker's compute time is per-sample cost × batch × multiplier.

Under ``compute_model = "emulated"`` a worker measures, before its first iteration, its
per-sample cost ``c`` (the fastest of :data:`CALIBRATION_PASSES` forward + backward passes on
one batch of the initial size, divided by that size). In every iteration it still computes the
real gradient (the model trains), then sleeps until ``c · b · m`` seconds have passed since the
compute began (``b`` the iteration's batch, ``m`` the worker's multiplier). So a tuned,
larger batch takes proportionally longer on *its own* emulated device, as on the paper's
dedicated machines, and the contention between workers that share this machine's cores no
longer sets the compute times, as long as the real pass is shorter than the target. The real
pass still uses CPU (the gradients are real); where it exceeds the target the iteration takes
the real time and ``overrun`` says so in the worker's row.

Under ``"real"`` (the default) compute times are what the machine gives, and the multiplier
sleeps ``(m - 1)`` × the real compute time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: The compute models of the real runtime.
COMPUTE_MODELS: tuple[str, ...] = ("real", "emulated")
#: Timed passes whose fastest sets the per-sample cost (the fastest is the least contended).
CALIBRATION_PASSES = 3


def calibrate(step: Callable[[], object], batch: int, passes: int = CALIBRATION_PASSES) -> float:
    """Per-sample cost in seconds: the fastest of ``passes`` calls of ``step`` over ``batch``.

    Parameters
    ----------
    step : callable
        One forward + backward pass over ``batch`` samples.
    batch : int
        Samples per pass (>= 1).
    passes : int, default CALIBRATION_PASSES
        Timed passes (>= 1).
    """
    if batch < 1 or passes < 1:
        raise ValueError(f"batch and passes must be >= 1, got {batch}, {passes}")
    best = float("inf")
    for _ in range(passes):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    return best / batch


def target_s(cost_per_sample: float, batch: int, multiplier: float) -> float:
    """The emulated compute time ``cost_per_sample · batch · multiplier`` in seconds."""
    return cost_per_sample * batch * multiplier


def serve(target: float, real_s: float) -> float:
    """Sleep the rest of ``target`` after ``real_s`` seconds of real compute; return the sleep.

    Returns 0 (no sleep) when the real pass already took ``target`` or longer.
    """
    rest = target - real_s
    if rest > 0:
        time.sleep(rest)
        return rest
    return 0.0

"""Emulated dedicated devices: a worker's compute time is base cost × batch × multiplier.

Under ``compute_model = "emulated"`` every worker of a run shares one base per-sample cost
``c`` (``sample_cost_s``): a fixed number, or (``None``, the ``auto`` default) measured once
per run before the first permission. In every iteration a worker still computes the real
gradient (the model trains), then sleeps until ``c · b · m`` seconds have passed since the
compute began (``b`` the iteration's batch, ``m`` the worker's multiplier). So a tuned,
larger batch takes proportionally longer on *its own* emulated device, as on the paper's
dedicated machines, and the contention between workers that share this machine's cores no
longer sets the compute times, as long as the real pass is shorter than the target. The real
pass still uses CPU (the gradients are real); where it exceeds the target the iteration takes
the real time and ``overrun`` says so in the worker's row; the summary's ``overrun_share`` is
the share of such iterations, and above :data:`OVERRUN_WARN_SHARE` the run warns that the
emulation did not hold.

``auto``: once every worker has loaded its model and data (a barrier through the store, so no
rank is still importing or building), all workers calibrate *at the same time* (each
:data:`WARMUP_PASSES` untimed, then the median of :data:`CALIBRATION_PASSES` timed passes),
exchange their costs, and every worker takes their median (:func:`shared_cost`). Why this
rule: the barrier keeps start-up work out of the measurement; calibrating concurrently
measures a pass while all N workers compute on this machine's cores, the most contended state
of the run, so the real passes rarely outlast the target (a single worker's uncontended cost
would be overrun by every concurrent pass); the medians drop a stray slow pass and a worker
that was descheduled. A fixed ``sample_cost_s`` skips all of this and makes the emulated
devices the same across runs and machines.

Under ``"real"`` (the default) compute times are what the machine gives, and the multiplier
sleeps ``(m - 1)`` × the real compute time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: The compute models of the real runtime.
COMPUTE_MODELS: tuple[str, ...] = ("real", "emulated")
#: Untimed passes before calibrating (first-call allocations, caches).
WARMUP_PASSES = 2
#: Timed passes whose median is a worker's per-sample cost.
CALIBRATION_PASSES = 5
#: Above this share of overrun iterations the run warns that the emulation did not hold.
OVERRUN_WARN_SHARE = 0.10


def calibrate(
    step: Callable[[], object],
    batch: int,
    passes: int = CALIBRATION_PASSES,
    warmup: int = WARMUP_PASSES,
) -> float:
    """Per-sample cost in seconds: the median of ``passes`` timed calls of ``step`` / ``batch``.

    Parameters
    ----------
    step : callable
        One forward + backward pass over ``batch`` samples.
    batch : int
        Samples per pass (>= 1).
    passes : int, default CALIBRATION_PASSES
        Timed passes (>= 1).
    warmup : int, default WARMUP_PASSES
        Untimed passes before them (>= 0).
    """
    if batch < 1 or passes < 1 or warmup < 0:
        raise ValueError(f"batch and passes must be >= 1, warmup >= 0; got {batch}, {passes}, "
                         f"{warmup}")  # fmt: skip
    for _ in range(warmup):
        step()
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / batch


def shared_cost(costs: Sequence[float]) -> float:
    """The run's base per-sample cost: the median of the workers' calibrated ``costs``."""
    if not costs:
        raise ValueError("no calibrated cost to share")
    return float(statistics.median(costs))


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


def emulation_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's base cost and overrun share from its worker rows (None where no row has them).

    ``sample_cost_s`` is the rows' ``cost_per_sample_s`` (one value: every worker shares it);
    ``overrun_share`` the share of rows whose real pass outlasted ``compute_target_s``.
    Rows read back from a CSV carry ``"True"``/``"False"``; live rows carry bools.
    """
    emulated = [r for r in rows if r.get("overrun") not in (None, "")]
    if not emulated:
        return {"sample_cost_s": None, "overrun_share": None}
    over = sum(str(r["overrun"]) == "True" for r in emulated)
    return {"sample_cost_s": float(emulated[0]["cost_per_sample_s"]),
            "overrun_share": over / len(emulated)}  # fmt: skip


def overrun_warning(share: float | None, limit: float = OVERRUN_WARN_SHARE) -> str | None:
    """A warning when more than ``limit`` of the iterations overran their emulated time."""
    if share is None or share <= limit:
        return None
    return (f"the real pass outlasted the emulated compute time in {share:.0%} of the "
            f"iterations (> {limit:.0%}): the emulation did not hold; set a larger "
            "--sample-cost or lighten the machine")  # fmt: skip

"""Batch-size tuning for heterogeneous workers (R²SP, the paper's Table III).

Two rules, both giving a worker's tuned batch size from its measured speed ``v`` (samples/s:
batch size / compute time) and blocking time ``t_block`` (waiting for its permission):

* ``"idle"`` (default): ``b' = b + v · t_block``: fill the fast worker's idle time with samples.
  It reproduces Table III exactly from the paper's speeds and blocking times (p2.x:
  512 + 628·0.62 = 901.4 -> 901; g3.4x: 512 + 917·0.82 = 1263.9 -> 1264; the slowest, never
  blocked, stays 512).
* ``"proportional"``: ``b' = b · v / v_slowest``: equal compute time for all (the Fig. 5 text:
  1000 -> 1464 / 2138). It ignores communication and turn effects, so it gives 750 / 1094 for
  Table III's workers.

When: once. Each worker's speed and blocking are averaged over its iterations
``1 .. warmup`` (iteration 0 is left out: every worker starts it at once, unblocked); when every
live worker has that many, all batch sizes are tuned together and kept for the rest of the run.
Tuning once matches the paper's procedure (blocking measured without tuning, then tuned sizes)
and avoids a feedback loop: after tuning the blocking is ~0, and re-applying the idle rule to
the tuned size could only keep or grow it. Sizes are rounded half up and never below 1.
"""

from __future__ import annotations

import math

from fl_r2sp.cluster.policies.common.base import PushReport

#: Batch-size tuning rules of R²SP ("none" = no tuning).
TUNING_RULES: tuple[str, ...] = ("none", "idle", "proportional")


def idle_rule(batch_size: int, speed: float, blocking_s: float) -> int:
    """``b + v · t_block``, rounded half up (Table III's rule)."""
    _check(batch_size, speed)
    if not blocking_s >= 0:
        raise ValueError(f"blocking time must be >= 0 s, got {blocking_s!r}")
    return max(1, math.floor(batch_size + speed * blocking_s + 0.5))


def proportional_rule(batch_size: int, speed: float, slowest_speed: float) -> int:
    """``b · v / v_slowest``, rounded half up (equal compute time per iteration)."""
    _check(batch_size, speed)
    if not slowest_speed > 0:
        raise ValueError(f"slowest speed must be > 0 samples/s, got {slowest_speed!r}")
    return max(1, math.floor(batch_size * speed / slowest_speed + 0.5))


def _check(batch_size: int, speed: float) -> None:
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    if not speed > 0:
        raise ValueError(f"speed must be > 0 samples/s, got {speed!r}")


class BatchTuner:
    """Collects warm-up measurements and tunes every worker's batch size once.

    Parameters
    ----------
    rule : str
        "idle" or "proportional" (see the module docstring).
    base_batch : int
        The initial batch size b of every worker (>= 1).
    warmup : int, default 5
        Iterations (after iteration 0) averaged per worker before tuning (>= 1).
    """

    def __init__(self, rule: str, base_batch: int, warmup: int = 5) -> None:
        if rule not in ("idle", "proportional"):
            raise ValueError(f"unknown tuning rule {rule!r}; choose 'idle' or 'proportional'")
        if warmup < 1:
            raise ValueError(f"tuning warmup must be >= 1 iteration, got {warmup}")
        if base_batch < 1:
            raise ValueError(f"batch size must be >= 1, got {base_batch}")
        self.rule = rule
        self.base_batch = base_batch
        self.warmup = warmup
        self.tuned: dict[int, int] | None = None
        #: Warm-up means used by :meth:`tune`: {"speed": {w: v}, "blocking": {w: s}}.
        self.means: dict[str, dict[int, float]] = {}
        self._speed: dict[int, list[float]] = {}
        self._block: dict[int, list[float]] = {}

    def observe(self, report: PushReport) -> None:
        """Record one report's speed and blocking (warm-up iterations only)."""
        if self.tuned is not None or report.iteration < 1 or report.compute_s <= 0:
            return
        speeds = self._speed.setdefault(report.worker, [])
        if len(speeds) < self.warmup:
            speeds.append(report.samples_per_s)
            self._block.setdefault(report.worker, []).append(report.blocking_s)

    def ready(self, live: set[int]) -> bool:
        """Whether every live worker has ``warmup`` measurements and nothing is tuned yet."""
        return (
            self.tuned is None
            and bool(live)
            and all(len(self._speed.get(w, ())) >= self.warmup for w in live)
        )

    def tune(self, live: set[int]) -> dict[int, int]:
        """Tune every live worker's batch size from its warm-up means; return and keep them."""
        speed = {w: sum(self._speed[w]) / len(self._speed[w]) for w in live}
        block = {w: sum(self._block[w]) / len(self._block[w]) for w in live}
        if self.rule == "idle":
            sizes = {w: idle_rule(self.base_batch, speed[w], block[w]) for w in live}
        else:
            slowest = min(speed.values())
            sizes = {w: proportional_rule(self.base_batch, speed[w], slowest) for w in live}
        self.tuned = sizes
        self.means = {"speed": speed, "blocking": block}
        return sizes

    def batch_for(self, worker: int) -> int:
        """The worker's batch size: tuned if tuning happened, else the base one."""
        if self.tuned is None:
            return self.base_batch
        return self.tuned.get(worker, self.base_batch)

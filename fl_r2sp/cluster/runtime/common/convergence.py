"""The convergence rule of cluster runs: training loss below a threshold for 10 iterations.

Whose loss: after every push the coordinator takes the **mean of each live worker's most
recent training loss** (the loss of the batch its latest push was computed on; workers that
have not pushed yet are left out). One *iteration* of the run is N_live pushes (each worker
pushes once per iteration under BSP and R²SP), so "below the threshold for ``window``
consecutive iterations" means below it after each of the last ``window · N_live`` pushes.
Pushes without a finite loss (scripted compute) never count as below.
"""

from __future__ import annotations

import math


class ConvergenceTracker:
    """Streaming check of the convergence rule (see the module docstring).

    Parameters
    ----------
    threshold : float
        Loss threshold (<= 0 disables the rule: :meth:`add` never returns True).
    window : int
        Consecutive iterations required (>= 1).
    """

    def __init__(self, threshold: float, window: int) -> None:
        if window < 1:
            raise ValueError(f"convergence window must be >= 1, got {window}")
        self.threshold = float(threshold)
        self.window = int(window)
        self.latest: dict[int, float] = {}
        self.below = 0  # consecutive pushes with the mean below the threshold

    def mean_loss(self) -> float:
        """Mean of the live workers' latest losses (NaN before any push)."""
        values = list(self.latest.values())
        return math.fsum(values) / len(values) if values else math.nan

    def add(self, worker: int, loss: float, live: int) -> bool:
        """Fold in a push's loss; True once the rule is met.

        Parameters
        ----------
        worker : int
            The pushing worker.
        loss : float
            Its batch's training loss (NaN if unknown).
        live : int
            Number of live workers N_live now.
        """
        self.latest[worker] = float(loss)
        mean = self.mean_loss()
        if self.threshold > 0 and math.isfinite(mean) and mean < self.threshold:
            self.below += 1
        else:
            self.below = 0
        return self.threshold > 0 and self.below >= self.window * max(1, live)

    def drop(self, worker: int) -> None:
        """Forget a lost worker's loss."""
        self.latest.pop(worker, None)

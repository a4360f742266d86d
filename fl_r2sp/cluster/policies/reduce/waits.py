"""Accounting of BPAWR's waits (the paper's Fig. 7 "wasted wait time"), two definitions.

The paper: "a group of workers might be configured to wait for more ready workers; if no newly
ready workers join finally, we call these wait time slots wasted". Groups are re-formed at every
evaluation, so "the group" and "join" need a reading; we report two:

* **member** (strict, ``wasted_member_s``): a queued worker waits from the first WAIT decision
  that covers its group until its group launches; the whole wait is wasted if no member of the
  group it finally launches with became ready after it was told to wait. A worker that waited
  and was then displaced into a slower group counts as wasted.
* **slot** (lenient, ``wasted_slot_member_s``): each WAIT decision opens a slot of the group's
  size until the next evaluation; the slot is wasted if that evaluation is a Δt timeout with no
  worker at all having become ready in between.

Both are in member-seconds (divide by n for per worker). Waits still open when the run ends
count as wasted (an upper bound). ``waited_member_s`` is all BPAWR-induced waiting.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

STAT_KEYS: tuple[str, ...] = (
    "wait_decisions", "waited_member_s", "wasted_member_s", "wasted_slot_member_s",
)  # fmt: skip


class WaitLedger:
    """Open waits and the totals of :data:`STAT_KEYS` (see the module docstring)."""

    def __init__(self) -> None:
        self.since: dict[int, float] = {}
        self.slots: list[tuple[float, int]] = []
        self.arrived = False
        self.totals: dict[str, float] = dict.fromkeys(STAT_KEYS, 0.0)

    def arrival(self) -> None:
        """A worker became ready (before the evaluation it triggers)."""
        self.arrived = True

    def evaluation(self, now: float) -> None:
        """An evaluation starts: close the slots opened by the previous one."""
        if self.slots and not self.arrived:
            self.totals["wasted_slot_member_s"] += sum((now - t) * m for t, m in self.slots)
        self.slots.clear()
        self.arrived = False

    def wait(self, group: Sequence[int], now: float) -> None:
        """BPAWR told ``group`` to wait at ``now``."""
        self.totals["wait_decisions"] += 1
        for w in group:
            if w not in self.since:
                self.since[w] = now
        self.slots.append((now, len(group)))

    def launch(self, members: Sequence[int], ready_at: NDArray[np.float64], now: float) -> float:
        """``members`` launch at ``now``; return the group's wait (earliest-told member)."""
        waits = [self.since.pop(w) for w in members if w in self.since]
        if not waits:
            return 0.0
        latest_ready = float(ready_at[list(members)].max())
        for since in waits:
            self.totals["waited_member_s"] += now - since
            if latest_ready <= since:  # nobody who became ready after the wait joined
                self.totals["wasted_member_s"] += now - since
        return now - min(waits)

    def forget(self, worker: int) -> None:
        """A lost worker's open wait is dropped."""
        self.since.pop(worker, None)

    def finish(self, now: float) -> None:
        """The run ends: open waits and slots count as wasted."""
        for since in self.since.values():
            self.totals["waited_member_s"] += now - since
            self.totals["wasted_member_s"] += now - since
        self.since.clear()
        if not self.arrived:
            self.evaluation(now)
        self.slots.clear()

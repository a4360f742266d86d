"""Applying pushes in permission order (R²SP's ``push_order = "permission"``).

R²SP grants permissions round-robin, but the pushes that follow them may arrive in another
order: a worker whose iteration runs long (a loaded core, a slow transfer) is overtaken by the
workers permitted after it, each of which may push once more before the turn comes back to
it. Applied in arrival order, the update of a worker permitted at position i can then meet the
updates of the N − 1 permissions before i *and* of up to N − 1 permissions after i, so its
staleness reaches 2(N − 1) (runs with N = 4 measured 4–6; the paper's bound is N − 1).

Applied in permission order, a push waits until the pushes of every earlier permission are
applied, so the only updates applied between a worker's pull (right after its permission) and
its own update are those of the N − 1 permissions before it: staleness ≤ N − 1 (each other
worker has at most one permission outstanding, and its older pushes were applied before it
asked again). A push waits only for pushes that are on their way; a lost worker's
permissions leave the sequence (:meth:`PushSequencer.drop`), so a dead worker, or one the
caller declares lost after its timeout, releases the pushes waiting behind it.

:class:`PushSequencer` is the bookkeeping only (no clock, no threads); the runtime's
coordinator and the twin feed it permissions and arrivals and apply what it releases.
"""

from __future__ import annotations

from collections import deque

#: When pushes are applied: as they arrive, or in the order of their permissions.
PUSH_ORDERS: tuple[str, ...] = ("arrival", "permission")

Push = tuple[int, int]  # (worker, iteration)


class PushSequencer:
    """The permitted pushes in permission order; releases each once all earlier ones are in.

    Usage: :meth:`permit` every permission in the order the policy gave them; :meth:`arrive`
    when a push arrives, and apply the pushes it returns, in order; :meth:`drop` a lost worker;
    :meth:`flush` at the end of a run.
    """

    def __init__(self) -> None:
        self._order: deque[Push] = deque()
        self._arrived: set[Push] = set()

    def permit(self, worker: int, iteration: int) -> None:
        """Worker ``worker`` may start ``iteration``: its push comes after all permitted before."""
        self._order.append((worker, iteration))

    def arrive(self, worker: int, iteration: int) -> list[Push]:
        """The push of ``(worker, iteration)`` arrived; return the pushes now to apply, in order
        (empty while an earlier permitted push is still on its way).

        Raises
        ------
        ValueError
            If that push was never permitted, or arrives twice.
        """
        push = (worker, iteration)
        if push not in self._order or push in self._arrived:
            raise ValueError(f"push {push} was not permitted or already arrived")
        self._arrived.add(push)
        return self._release()

    def drop(self, worker: int) -> list[Push]:
        """Forget ``worker``'s permissions (it is lost; a push of it that already arrived is
        not released); return the pushes that no longer wait for it."""
        self._order = deque(p for p in self._order if p[0] != worker)
        self._arrived = {p for p in self._arrived if p[0] != worker}
        return self._release()

    def waiting(self) -> list[Push]:
        """Pushes that arrived and wait for an earlier one, in permission order."""
        return [p for p in self._order if p in self._arrived]

    def head(self) -> Push | None:
        """The earliest permitted push not applied yet (what the waiting ones wait for)."""
        return self._order[0] if self._order else None

    def flush(self) -> list[Push]:
        """Release every arrived push, in permission order, whatever is missing (run ending)."""
        out = self.waiting()
        self._order.clear()
        self._arrived.clear()
        return out

    def _release(self) -> list[Push]:
        out: list[Push] = []
        while self._order and self._order[0] in self._arrived:
            push = self._order.popleft()
            self._arrived.discard(push)
            out.append(push)
        return out

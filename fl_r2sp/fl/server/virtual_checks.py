"""What keeps a virtual-time run independent of the wall clock (``docs/architecture.md`` §4).

Under the virtual clock, failures in virtual time come only from the dropout
model (and from replies that are errors or rejected updates, at a virtual time
fixed by the job). Nothing measured in real time may turn into a virtual
event, because real time depends on the host, the number of Ray actors and the
order in which replies happen to arrive. Three rules, each raising
:class:`VirtualTimeError` (the run stops with a clear message) instead of
silently bending the result:

* :class:`StallWatch`: the real-time safety timeout. A slow reply never fails
  a job; the loop only gives up when it has waited ``job-timeout`` real seconds
  in a row without receiving any reply.
* :func:`push_start`: a reply's compute time must not undercut the server's
  per-client compute lower bound (the look-ahead of the conservative wait,
  which assumes the server and the clients model compute alike), its delay must
  be a finite number >= 0, and its push must not start before an event the loop
  has already processed.
* The Flower transport (``fl_r2sp.fl.flower.grid_transport``) raises it for a
  message lost to real time (TTL expiry, a node that stopped answering).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence


class VirtualTimeError(RuntimeError):
    """A virtual-time run cannot go on without letting real time leak into its result."""


class StallWatch:
    """Real-time safety timeout of the virtual loop: abort after ``limit`` s without replies.

    Parameters
    ----------
    limit : float
        Real seconds (``job-timeout``) the loop may wait in a row without any reply.
    clock : callable, default time.monotonic
        Real-time source (tests pass a fake one).
    """

    def __init__(self, limit: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = float(limit)
        self.clock = clock
        self._since: float | None = None

    def progress(self) -> None:
        """A reply arrived: the wait, if any, is over."""
        self._since = None

    def idle(self, waiting_for: Sequence[tuple[int, int]]) -> None:
        """A poll returned nothing while the loop waits for ``waiting_for`` ((cid, job) pairs).

        Raises
        ------
        VirtualTimeError
            Once the loop has waited more than ``limit`` real seconds without a reply.
        """
        now = self.clock()
        if self._since is None:
            self._since = now
            return
        waited = now - self._since
        if waited <= self.limit:
            return
        shown = ", ".join(f"client {c} job {j}" for c, j in list(waiting_for)[:5])
        more = f" and {len(waiting_for) - 5} more" if len(waiting_for) > 5 else ""
        raise VirtualTimeError(
            f"no reply for {waited:.0f} real seconds (job-timeout={self.limit:g}) while waiting "
            f"for {shown}{more}. Under the virtual clock a slow reply is never turned into a "
            "failed job (virtual failures come only from the dropout model), so the run stops "
            "here: raise job-timeout if jobs are this slow, else a client hangs"
        )


def push_start(
    cid: int,
    index: int,
    pull_end: float,
    compute_s: float,
    delay_s: float,
    compute_lb: float,
    now: float,
) -> float:
    """Virtual time the push of job ``index`` of ``cid`` starts, after checking the reply.

    Parameters
    ----------
    cid, index : int
        The job.
    pull_end : float
        Virtual time its pull ended.
    compute_s, delay_s : float
        Compute time and injected delay the reply reports.
    compute_lb : float
        The server's lower bound of the client's compute time (device speed x tau).
    now : float
        Virtual time of the last event the loop processed.

    Returns
    -------
    float
        ``pull_end + compute_s + delay_s``.

    Raises
    ------
    VirtualTimeError
        If the delay is negative or not finite, the compute time is below the lower
        bound (the server's and the client's compute models disagree), or the push
        would start before ``now`` (it would have to be scheduled in the past).
    """
    job = f"client {cid} job {index}"
    if not (math.isfinite(compute_s) and math.isfinite(delay_s) and delay_s >= 0):
        raise VirtualTimeError(
            f"{job} reported compute {compute_s!r} s and delay {delay_s!r} s: both must be "
            "finite and the delay >= 0"
        )
    if compute_s < compute_lb:
        raise VirtualTimeError(
            f"{job} reported {compute_s!r} s of compute, below the server's lower bound "
            f"{compute_lb!r} s for this client: the server and the clients model compute "
            "differently (run them with the same network, device, model, local-iterations and "
            "seed); the conservative wait relies on that bound"
        )
    at = pull_end + compute_s + delay_s
    if at < now:
        raise VirtualTimeError(
            f"{job} would start its push at virtual t={at!r}, before events already processed "
            f"at t={now!r}; a reply is never scheduled in the past"
        )
    return at

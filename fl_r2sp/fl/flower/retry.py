"""Bounded retries with exponential backoff for calls to the SuperLink.

Flower's own HTTP client (``flwr.superlink.grid.http_grid``) already retries
connection errors and HTTP 502/503/504 without bound; an HTTP 500 (e.g.
SQLite's "database is locked" under load) or a gRPC ``INTERNAL`` reaches the
ServerApp as an exception. Such an error says nothing about the node the
message was for, so it must not fail the node's job: :func:`call_with_retry`
retries it with exponentially growing waits, bounded in attempts *and* total
time, and only then gives up (the caller decides what failing means).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger("fl_r2sp")
T = TypeVar("T")

#: Words of an error message that mark a passing SuperLink-side problem.
TRANSIENT_WORDS = ("database is locked", "unavailable", "timed out", "timeout", "try again")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry one call.

    Attributes
    ----------
    attempts : int (default: 6)
        Calls in all (>= 1; 1 = no retry).
    first_wait : float (default: 0.05)
        Seconds before the second call; each further wait doubles.
    max_wait : float (default: 2.0)
        Longest single wait.
    total : float (default: 10.0)
        Seconds after the first call beyond which no retry starts
        (run-config ``grid-retry-time``).
    """

    attempts: int = 6
    first_wait: float = 0.05
    max_wait: float = 2.0
    total: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.first_wait < 0 or self.max_wait < 0 or self.total < 0:
            raise ValueError(
                f"RetryPolicy needs attempts >= 1 and non-negative waits, got {self!r}"
            )

    @classmethod
    def within(cls, total: float) -> RetryPolicy:
        """Retries bounded by ``total`` s alone: as many attempts as the default doubling
        waits (each at most ``max_wait``) fit in it.

        A ServerApp's pull that still fails stops the run; SQLite lock storms at a SuperLink
        with 32 nodes at load 30 lasted over 10 s, longer than 6 attempts last.
        """
        base = cls(total=total)
        attempts, spent = 1, 0.0
        while spent <= total:
            spent += min(base.max_wait, base.first_wait * 2 ** (attempts - 1))
            attempts += 1
        return cls(attempts=attempts, total=total)

    def waits(self) -> list[float]:
        """The waits between the calls (``attempts - 1`` of them), before the time bound."""
        return [min(self.max_wait, self.first_wait * 2**i) for i in range(self.attempts - 1)]


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: HTTP 5xx, transport errors, gRPC server-side codes.

    A 4xx (bad request, unauthorised, payload too large) or a Python error in
    our own code is not transient and is raised at once.
    """
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        return status >= 500
    code = getattr(exc, "code", None)
    if callable(code):  # grpc.RpcError
        try:
            name = getattr(code(), "name", "")
        except Exception:  # noqa: BLE001 -- an RpcError without a status: judge the text
            name = ""
        if name:
            return name in {"UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"}
    module = type(exc).__module__
    if module.startswith(("httpx", "httpcore")) or isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return any(word in str(exc).lower() for word in TRANSIENT_WORDS)


def call_with_retry(
    call: Callable[[], T],
    what: str,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``call``; retry transient errors (:func:`is_transient`) with backoff.

    Parameters
    ----------
    call : callable
        The SuperLink call (no arguments).
    what : str
        What the call does, for the log.
    policy : RetryPolicy
        Attempts, waits and the time bound.
    sleep, clock : callable (default: ``time.sleep``, ``time.monotonic``)
        Injected in tests.

    Raises
    ------
    Exception
        The call's last error once the attempts or the time are spent, or at
        once for a non-transient error.
    """
    start = clock()
    waits = policy.waits()
    for attempt in range(policy.attempts):
        try:
            return call()
        except Exception as exc:
            last = attempt == policy.attempts - 1
            if last or not is_transient(exc) or clock() - start + waits[attempt] > policy.total:
                if attempt:
                    log.warning("%s failed after %d attempts: %s", what, attempt + 1, exc)
                raise
            log.info("%s failed (%s); retry %d in %.2fs", what, exc, attempt + 1, waits[attempt])
            sleep(waits[attempt])
    raise AssertionError("unreachable: the loop returns or raises")

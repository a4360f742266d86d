"""The ServerApp's task heartbeat outlives a passing SuperLink error.

Flower 1.42's ServerApp process sends a task heartbeat every ~20 s from a thread
(``flwr.supercore.heartbeat.HeartbeatSender``). Its HTTP heartbeat function counts only HTTP
503/504 as a failed heartbeat (retried with backoff) and raises on any other status, which
ends the thread: one HTTP 500 "database is locked" from a busy SuperLink (seen with 32 nodes
at load 30, at the moment the soak's churn phase lost its ServerApp) silences the heartbeat for
good, and the SuperLink fails the run once the heartbeat expires. :func:`retry_heartbeat_5xx`
makes every 5xx a failed heartbeat, retried like a 503.
"""

from __future__ import annotations

from typing import Any

import httpx
from flwr.supercore import heartbeat

#: Marks the patched method (the patch is applied once per process).
_MARK = "_fl_r2sp_retries_5xx"


def retry_heartbeat_5xx() -> None:
    """Patch ``HeartbeatSender._heartbeat``: an HTTP 5xx becomes ``HeartbeatFailure``.

    The sender's thread looks the method up for every heartbeat, so a sender already running
    (the ServerApp's, started before the app's code runs) is covered too. A 4xx (e.g. the
    task's token refused) is raised as before.
    """
    original = heartbeat.HeartbeatSender._heartbeat
    if getattr(original, _MARK, False):
        return

    def guarded(self: Any) -> None:
        try:
            original(self)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code < 500:
                raise
            raise heartbeat.HeartbeatFailure from exc

    setattr(guarded, _MARK, True)
    heartbeat.HeartbeatSender._heartbeat = guarded  # type: ignore[method-assign]

"""The ServerApp's heartbeat thread retries an HTTP 500 instead of ending (heartbeat_guard)."""

from __future__ import annotations

import httpx
import pytest
from flwr.supercore import heartbeat

from fl_r2sp.fl.flower.heartbeat_guard import retry_heartbeat_5xx
from tests.fl.flower.test_liveness import http_error


def test_a_5xx_heartbeat_is_a_failed_heartbeat_and_a_4xx_still_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Restored after the test: the patch is process-wide.
    monkeypatch.setattr(
        heartbeat.HeartbeatSender, "_heartbeat", heartbeat.HeartbeatSender._heartbeat
    )
    status = [500]

    def send() -> bool:
        raise http_error(status[0])

    sender = heartbeat.HeartbeatSender(send)
    with pytest.raises(httpx.HTTPStatusError):  # Flower's own: ends the heartbeat thread
        sender._heartbeat()
    retry_heartbeat_5xx()
    retry_heartbeat_5xx()  # once per process
    with pytest.raises(heartbeat.HeartbeatFailure):  # retried by the sender with backoff
        sender._heartbeat()
    status[0] = 401
    with pytest.raises(httpx.HTTPStatusError):
        sender._heartbeat()

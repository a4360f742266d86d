"""Token bucket (fake clock, nothing timed) and chunked gloo transfers (3 real processes)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fl_r2sp.cluster.runtime.common.throttle import TokenBucket, chunk_sizes


class FakeTime:
    """A clock that only moves when someone sleeps on it or does simulated work."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_saturated_bucket_holds_its_cap_within_5_percent() -> None:
    t = FakeTime()
    rate, chunk = 1_000_000.0, 65_536
    bucket = TokenBucket(rate, burst_bytes=chunk, clock=t.clock, sleep=t.sleep)
    for _ in range(1000):
        bucket.take(chunk)
    measured = 1000 * chunk / t.now
    # Only the initial burst goes faster than the rate: 1000 chunks in 999 chunks' time.
    assert measured == pytest.approx(rate * 1000 / 999)
    assert abs(measured / rate - 1) < 0.05


def test_bucket_with_slow_consumer_never_sleeps_and_fast_consumer_is_capped() -> None:
    t = FakeTime()
    bucket = TokenBucket(1000.0, burst_bytes=100, clock=t.clock, sleep=t.sleep)
    # Demand 500 B/s (100 B every 0.2 s): under the cap, no waiting at all.
    slept = []
    for _ in range(50):
        slept.append(bucket.take(100))
        t.now += 0.2
    assert max(slept) == 0.0
    # Demand 2000 B/s (100 B of work every 0.05 s): the bucket stretches each cycle to 0.1 s.
    start, n = t.now, 200
    for _ in range(n):
        bucket.take(100)
        t.now += 0.05
    assert n * 100 / (t.now - start) == pytest.approx(1000.0, rel=0.01)


def test_debt_accumulates_and_each_take_returns_its_own_wait() -> None:
    t = FakeTime()
    bucket = TokenBucket(100.0, burst_bytes=50, clock=t.clock, sleep=lambda s: None)
    # The clock never moves: 50 B are free, then every byte costs 10 ms in order.
    assert [bucket.take(50) for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    assert bucket.seconds_slept == pytest.approx(3.0) and bucket.bytes_taken == 200


def test_concurrent_takes_queue_behind_each_other() -> None:
    t = FakeTime()
    bucket = TokenBucket(1000.0, burst_bytes=0, clock=t.clock, sleep=lambda s: None)
    waits: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(100):
            w = bucket.take(10)
            with lock:
                waits.append(w)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    # Whatever the interleaving, the k-th reservation waits k * 10 ms: no two callers share
    # the same tokens (a lost update would repeat a value and end below 8 s).
    assert sorted(waits) == pytest.approx([0.01 * k for k in range(1, 801)])


@pytest.mark.parametrize("rate", [0.0, math.inf])
def test_zero_or_infinite_rate_is_unlimited(rate: float) -> None:
    bucket = TokenBucket(rate, burst_bytes=0, clock=lambda: 0.0, sleep=lambda s: 1 / 0)
    assert bucket.unlimited and bucket.take(10**12) == 0.0 and bucket.bytes_taken == 10**12


def test_bad_bucket_arguments() -> None:
    for rate in (-1.0, math.nan):
        with pytest.raises(ValueError, match="rate_bytes_per_s"):
            TokenBucket(rate, 10)
    with pytest.raises(ValueError, match="burst_bytes"):
        TokenBucket(1.0, -1)
    with pytest.raises(ValueError, match="nbytes"):
        TokenBucket(1.0, 1).take(-5)


def test_from_mb_s_uses_decimal_megabytes() -> None:
    assert TokenBucket.from_mb_s(40).rate == 40_000_000


def test_chunk_sizes() -> None:
    assert chunk_sizes(10, 4) == [4, 4, 2]
    assert chunk_sizes(8, 4) == [4, 4]
    assert chunk_sizes(3, 4) == [3]
    assert chunk_sizes(0, 4) == []
    with pytest.raises(ValueError, match="chunk"):
        chunk_sizes(10, 0)
    with pytest.raises(ValueError, match="total"):
        chunk_sizes(-1, 4)


_PEER = r"""
import sys, datetime, torch, torch.distributed as dist
from fl_r2sp.cluster.runtime.common.throttle import TokenBucket, recv_chunked, send_chunked
rank, store = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=3,
                        timeout=datetime.timedelta(seconds=60))
n, chunk = 1000, 1024  # 256 float32 per chunk: 256, 256, 256, 232
if rank == 0:
    taken = []
    bucket = TokenBucket(1e12, 0, sleep=lambda s: None)
    bucket.reserve = lambda nbytes: taken.append(nbytes) or 0.0
    got = {}
    for _ in range(2):
        out = torch.zeros(n)
        src = recv_chunked(out, tag_first=10, tag_rest=11, chunk_bytes=chunk, bucket=bucket)
        got[src] = out
    for src in (1, 2):
        assert torch.equal(got[src], torch.arange(n, dtype=torch.float32) * src), src
    assert taken == [1024, 1024, 1024, 928] * 2, taken
    back = torch.zeros(7, dtype=torch.int64)
    recv_chunked(back, tag_first=12, tag_rest=13, src=2, chunk_bytes=16)
    assert back.tolist() == list(range(7)), back
    print("PEER-OK")
else:
    send_chunked(torch.arange(n, dtype=torch.float32) * rank, 0, 10, 11, chunk_bytes=chunk)
    if rank == 2:
        send_chunked(torch.arange(7), 0, 12, 13, chunk_bytes=16)  # int64: 2, 2, 2, 1 elements
dist.barrier()
dist.destroy_process_group()
"""


def test_chunked_transfers_over_gloo_any_source(tmp_path: Path) -> None:
    script = tmp_path / "peer.py"
    script.write_text(_PEER)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    store = tmp_path / "store"
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(r), str(store)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(3)
    ]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert "PEER-OK" in outs[0]

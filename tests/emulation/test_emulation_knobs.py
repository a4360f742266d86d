"""Small-group cost knobs: per-job compute jitter and a per-transfer overhead in the profile."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.emulation.devices import make_device_model
from fl_r2sp.emulation.profiles import get_profile
from fl_r2sp.emulation.rng import STREAM_JITTER, rng_for


def test_no_jitter_is_exactly_one_without_a_draw() -> None:
    for spec in ("profile", "profile(jitter=0)", "lognormal(sigma=0.5)"):
        model = make_device_model(spec, 0.07)
        assert model.jitter == 0.0
        assert all(model.job_multiplier(3, cid, job) == 1.0 for cid in range(4) for job in range(4))


def test_jitter_is_one_plus_scaled_exponential_per_job() -> None:
    model = make_device_model("profile(jitter=0.2)", 0.07)
    expected = 1.0 + 0.2 * rng_for(5, STREAM_JITTER, 7, 3).exponential()
    assert model.job_multiplier(5, 7, 3) == expected
    draws = np.array([model.job_multiplier(5, 7, j) for j in range(4000)])
    # Never a speed-up (the per-client speed stays a lower bound); mean 1 + 0.2 (SE 0.003).
    assert draws.min() >= 1.0
    assert abs(draws.mean() - 1.2) < 0.015
    assert model.seconds_per_iteration(5, 7) == 0.07  # the client's own speed is unchanged


def test_jitter_combines_with_tiers_without_becoming_a_tier() -> None:
    model = make_device_model("profiles(fast=0.5:1,jitter=0.1)", 0.1)
    assert model.jitter == 0.1
    assert model.seconds_per_iteration(0, 0) == 0.05
    with pytest.raises(ValueError, match="jitter"):
        make_device_model("profile(jitter=-1)", 0.1)


def test_profile_overhead_spec() -> None:
    plain = get_profile("paper-ec2")
    slow = get_profile("paper-ec2(overhead=0.3)")
    assert plain.overhead == 0.0 and slow.overhead == 0.3
    assert (slow.server_egress, slow.client_up) == (plain.server_egress, plain.client_up)
    with pytest.raises(ValueError, match="must be >= 0"):
        get_profile("paper-ec2(overhead=-0.1)")
    with pytest.raises(ValueError, match="unknown parameter"):
        get_profile("paper-ec2(latency=1)")
    with pytest.raises(ValueError, match="unknown network profile 'wan'"):
        get_profile("wan(overhead=1)")


def test_runtime_reports_the_jittered_compute_time() -> None:
    from fl_r2sp.fl.clients.runtime import ClientRuntime
    from fl_r2sp.fl.config import RunConfig
    from fl_r2sp.fl.protocol import Job

    cfg = RunConfig(
        timing_only=True,
        device="profile(jitter=0.5)",
        local_iterations=10,
        network="paper-ec2",
        model="mlp",
        seed=2,
    )
    rt = ClientRuntime(cfg)
    base = rt.compute_seconds(1)
    assert base == pytest.approx(0.066 * 10)  # the profile's mlp speed x tau
    reply = rt.run(Job(cid=1, index=4, tag=0, weights=np.zeros(3, np.float32)))
    factor = 1.0 + 0.5 * rng_for(2, STREAM_JITTER, 1, 4).exponential()
    assert reply.compute_s == base * factor

"""ASP, FedAsync and FedBuff policies with hand-computed weights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.policies.asp import ASPPolicy, FedAsyncPolicy
from fl_r2sp.fl.policies.bsp import BSPPolicy
from fl_r2sp.fl.policies.factory import make_policy
from fl_r2sp.fl.policies.fedbuff import FedBuffPolicy
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import AsyncParams
from fl_r2sp.fl.policies.scripted import ScriptedDriver
from fl_r2sp.fl.policies.staleness import StalenessFn


def weights_of(drv: ScriptedDriver) -> list[list[float]]:
    return [m.weights.tolist() for _, m in drv.models()]


def test_asp_average_mixing_and_reply() -> None:
    drv = ScriptedDriver(ASPPolicy(4, max_failures=1))
    drv.start([0])
    drv.update(1.0, 0, [4])  # w = 3/4 * 0 + 1/4 * 4 = 1
    drv.update(2.0, 1, [9])  # w = 3/4 * 1 + 1/4 * 9 = 3
    assert weights_of(drv) == [[1.0], [3.0]]
    t, send = drv.sends_to(1)[-1]
    assert (t, send.cids, send.tag, send.weights.tolist()) == (2.0, (1,), 2, [3.0])
    drv.fail(3.0, 2)
    drv.fail(4.0, 2)  # dropped: N' = 3
    drv.update(5.0, 3, [6])  # w = 2/3 * 3 + 1/3 * 6 = 4
    assert weights_of(drv)[-1] == pytest.approx([4.0])
    assert drv.policy.summary()["dropped"] == [2]


def test_fedasync_polynomial_staleness() -> None:
    policy = FedAsyncPolicy(2, AsyncParams(alpha=0.6, staleness=StalenessFn("polynomial", a=0.5)))
    drv = ScriptedDriver(policy)
    drv.start([0])
    drv.update(1.0, 0, [10])  # staleness 0: alpha_t = 0.6 -> w = 6
    drv.update(2.0, 1, [16])  # staleness 1: alpha_t = 0.6 / sqrt(2)
    a1 = 0.6 / np.sqrt(2.0)
    assert weights_of(drv) == [[6.0], [pytest.approx(6 + a1 * 10, rel=1e-6)]]
    assert [r["staleness"] for r in drv.records("client_update")] == [0, 1]
    assert policy.name == "fedasync" and policy.summary()["max_staleness"] == 1


def test_fedasync_hinge_staleness() -> None:
    policy = FedAsyncPolicy(4, AsyncParams(alpha=0.5, staleness=StalenessFn("hinge", a=0.5, b=1)))
    drv = ScriptedDriver(policy)
    drv.start([0])
    for k, cid in enumerate(range(4)):  # staleness 0, 1, 2, 3
        drv.update(1.0 + k, cid, [8])
    expected = [0.5, 0.5, 0.5 / 1.5, 0.5 / 2.0]  # hinge: 1/(0.5*(t-1)+1) past b = 1
    assert [r["weight"] for r in drv.records("client_update")] == pytest.approx(expected)


def test_fedbuff_buffer_of_two_with_staleness() -> None:
    params = AsyncParams(buffer_size=2, staleness=StalenessFn("polynomial", a=1.0))
    policy = FedBuffPolicy(2, params)
    drv = ScriptedDriver(policy)
    drv.start([0])
    drv.update(1.0, 0, [2])  # buffered; c0 gets the unchanged model back
    assert policy.version == 0 and drv.jobs[0][0] == 0
    drv.update(2.0, 1, [4])  # buffer full: w = 0 + (2 + 4) / 2 = 3
    drv.update(3.0, 0, delta=[1])  # staleness 1: s = 1/2
    drv.update(4.0, 1, delta=[2])  # staleness 0: w = 3 + (0.5 + 2) / 2
    assert weights_of(drv) == [[3.0], [4.25]]
    assert [r["size"] for r in drv.records("buffer_apply")] == [2, 2]


def test_fedbuff_k1_equals_fedasync_without_staleness() -> None:
    # One client: every update starts from the current model (staleness 0), so
    # w + lr * (w_i - w) is FedAsync's (1 - alpha) w + alpha w_i with alpha = lr.
    rng = np.random.default_rng(3)
    steps = rng.normal(size=(6, 5)).astype(np.float32)
    w0 = rng.normal(size=5).astype(np.float32)
    runs = []
    constant = StalenessFn("constant")
    for policy in (
        FedBuffPolicy(1, AsyncParams(buffer_size=1, server_lr=0.6, staleness=constant)),
        FedAsyncPolicy(1, AsyncParams(alpha=0.6, staleness=constant)),
    ):
        drv = ScriptedDriver(policy)
        drv.start(w0)
        for k, step in enumerate(steps):
            drv.update(float(k + 1), 0, delta=step)
        runs.append(np.array(weights_of(drv)))
    assert runs[0].shape == (6, 5)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-5, atol=1e-6)


def test_factory_builds_each_strategy() -> None:
    base = RunConfig(num_partitions=8, num_groups=2)
    expected = {
        "fl-r2sp": FLR2SPPolicy,
        "bsp": BSPPolicy,
        "asp": ASPPolicy,
        "fedasync": FedAsyncPolicy,
        "fedbuff": FedBuffPolicy,
    }
    for name, cls in expected.items():
        policy = make_policy(base.replace(strategy=name), range(8), frozenset({1}))
        assert type(policy) is cls and policy.name == name
    fl = make_policy(base.replace(group_size=2), range(8), frozenset())
    assert isinstance(fl, FLR2SPPolicy) and fl.num_groups == 4
    assert fl.filter.known_outliers == frozenset()
    buff = make_policy(base.replace(strategy="fedbuff", buffer_size=3), range(8))
    assert isinstance(buff, FedBuffPolicy) and buff.buffer_size == 3
    with pytest.raises(ValueError, match="strategy"):
        make_policy(dataclasses.replace(base, strategy="ssp"), range(8))  # type: ignore[arg-type]

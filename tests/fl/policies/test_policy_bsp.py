"""BSP policy: equals FL-R²SP with one group; FedAvg-style sampling waits for all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fl_r2sp.fl.policies.base import ModelUpdated, Record, Send, Timer
from fl_r2sp.fl.policies.bsp import BSPPolicy
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams
from fl_r2sp.fl.policies.scripted import ScriptedDriver


def script(drv: ScriptedDriver) -> ScriptedDriver:
    """4 clients, C = 0.75 (need 3); round 1 takes 3 s, round 2 takes 1 s."""
    drv.start([0, 0])
    drv.update(1.0, 0, [1, 0])
    drv.update(2.0, 1, [0, 1])
    drv.update(3.0, 2, [2, 2])  # apply: mean = [1, 1]
    drv.update(3.5, 3, [9, 9])  # straggler: gets [1, 1] at once
    drv.update(3.6, 0, [3, 3])
    drv.update(3.8, 3, [1, 1])
    drv.update(4.0, 1, [2, 2])  # apply: mean = [2, 2]
    drv.update(4.5, 2, [5, 5])  # straggler
    drv.finish()
    return drv


def normalize(log: list[tuple[float, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for t, d in log:
        if isinstance(d, Send):
            out.append((t, "send", d.cids, d.tag, d.weights.tolist()))
        elif isinstance(d, ModelUpdated):
            out.append((t, "model", d.version, d.weights.tolist()))
        elif isinstance(d, Record):
            out.append((t, d.kind, repr(sorted(d.fields.items()))))
        else:
            out.append((t, repr(d)))
    return out


def test_bsp_equals_flr2sp_with_one_group() -> None:
    bsp = script(ScriptedDriver(BSPPolicy(4, GroupParams(fraction=0.75), seed=0)))
    fl = script(
        ScriptedDriver(FLR2SPPolicy(4, GroupParams(num_groups=1, fraction=0.75, gap_factor=1.0)))
    )
    assert normalize(bsp.log) == normalize(fl.log)
    applied = [(t, m.weights.tolist()) for t, m in bsp.models()]
    # Round 2 (1 s) is faster than T = 3: with one group no gap holds it back.
    assert applied == [(3.0, [1.0, 1.0]), (4.0, [2.0, 2.0])]
    assert not bsp.of(Timer)
    t, send = bsp.sends_to(3)[1]
    assert (t, send.cids, send.tag, send.weights.tolist()) == (3.5, (3,), 1, [1.0, 1.0])


def test_bsp_weighted_aggregation() -> None:
    drv = ScriptedDriver(BSPPolicy(2, GroupParams(fraction=1.0, aggregation="weighted"), seed=0))
    drv.start([0])
    drv.update(1.0, 0, [4], num_examples=3)
    drv.update(1.0, 1, [8], num_examples=1)
    assert drv.models()[0][1].weights.tolist() == [5.0]  # (3*4 + 8) / 4


def expected_sample(seed: int, rnd: int, n: int, k: int) -> tuple[int, ...]:
    rng = np.random.default_rng([seed, rnd])
    return tuple(sorted(int(i) for i in rng.choice(n, size=k, replace=False)))


def test_sample_mode_waits_for_all_sampled() -> None:
    policy = BSPPolicy(6, GroupParams(fraction=0.5), sampling="sample", seed=7)
    drv = ScriptedDriver(policy)
    (first,) = drv.start([0])
    s0 = expected_sample(7, 0, 6, 3)
    assert first.cids == s0 and policy.sampled() == s0
    values = [3.0, 6.0, 9.0]
    for k, cid in enumerate(s0[:2]):
        drv.update(1.0 + k, cid, [values[k]])
    assert policy.version == 0  # C * 6 = 3 sampled: 2 replies are not enough
    drv.update(10.0, s0[2], [values[2]])
    ((t, m),) = drv.models()
    assert t == 10.0 and m.weights.tolist() == [6.0]
    s1 = expected_sample(7, 1, 6, 3)
    assert drv.of(Send)[-1][1].cids == s1
    idle = set(range(6)) - set(s0) - set(s1)
    assert all(not drv.sends_to(c) for c in idle)


def test_sample_mode_dropped_client_no_longer_awaited() -> None:
    policy = BSPPolicy(4, GroupParams(fraction=0.5), sampling="sample", seed=1, max_failures=1)
    drv = ScriptedDriver(policy)
    drv.start([0])
    a, b = policy.sampled()
    drv.update(1.0, a, [2])
    drv.fail(2.0, b)
    assert drv.sends_to(b)[-1][0] == 2.0  # first failure: re-sent
    drv.fail(3.0, b)  # dropped: the round completes with a alone
    ((t, m),) = drv.models()
    assert t == 3.0 and m.weights.tolist() == [2.0]
    assert b not in policy.sampled()


def test_invalid_sampling() -> None:
    with pytest.raises(ValueError, match="sampling"):
        BSPPolicy(4, sampling="all", seed=0)  # type: ignore[arg-type]

"""Simultaneous pushes in virtual time break ties by partition id, never by real arrival order.

Four identical clients (same compute, constant delay, infinitely fast pulls) all start their
first push at the same virtual time. The server's ingress is first-come-first-served, so the
order in which those pushes are *started* decides who is collected (C = 1/2 of one group: the
first two). The loop starts them in partition-id order (the event queue's key); with the key
set to a constant they would start in the order the real replies happened to arrive.
"""

from __future__ import annotations

import numpy as np

from fl_r2sp.emulation.network import star_network
from fl_r2sp.emulation.profiles import Profile
from fl_r2sp.fl.policies.flr2sp import FLR2SPPolicy
from fl_r2sp.fl.policies.params import GroupParams, OutlierParams
from fl_r2sp.fl.protocol import Job, Reply
from fl_r2sp.fl.server.loop_base import StopRule
from fl_r2sp.fl.server.transport import InProcessTransport
from fl_r2sp.fl.server.virtual_loop import VirtualLoop

#: Pulls take no time to speak of; pushes queue at a 100 B/s first-come-first-served ingress.
TIE = Profile(
    name="tie",
    server_egress=1e12,
    server_ingress=100.0,
    client_down=1e12,
    client_up=1e12,
    ingress_discipline="fcfs",
)
CLIENTS = range(4)


def identical_client(job: Job) -> Reply:
    """Every client: 1 s of compute, 0.05 s delay, a step of 0.01 * (cid + 1)."""
    step = np.float32(0.01 * (job.cid + 1))
    return Reply(
        job.cid,
        job.index,
        job.tag,
        job.weights + step,
        num_examples=10,
        compute_s=1.0,
        delay_s=0.05,
    )


def run_tied(shuffle: int | None) -> VirtualLoop:
    loop = VirtualLoop(
        network=star_network(len(CLIENTS), TIE),
        model_bytes=8,
        overhead=0.0,
        compute_lb={c: 1.0 for c in CLIENTS},
        policy=FLR2SPPolicy(
            4, GroupParams(num_groups=1, fraction=0.5), OutlierParams(enabled=False)
        ),
        transport=InProcessTransport(CLIENTS, identical_client, shuffle_seed=shuffle),
        model_size=2,
        evaluator=None,
        stop=StopRule(max_updates=3),
        progress=False,
    )
    loop.run(np.ones(2, np.float32), list(CLIENTS))
    return loop


def test_tied_push_starts_go_in_partition_order_whatever_the_arrival_order() -> None:
    loops = {s: run_tied(s) for s in (None, 1, 2, 3)}
    ref = loops[None]
    first = [row for row in ref.events.jobs if row["job"] == 0]
    assert len({row["push_start"] for row in first}) == 1  # a real tie of all four
    # c0 and c1 win the tie: pushed first (8 B at 100 B/s each), collected, applied.
    ends = {row["cid"]: row["push_end"] - row["push_start"] for row in first}
    assert np.allclose([ends[0], ends[1]], [0.08, 0.16])
    collected = ref.events.of_kind("group_collect")[0]["collected"]
    assert collected == [0, 1]
    # The shuffled transports really answered the tied jobs in other orders...
    orders = {s: [cid for cid, _ in lp.replies[:4]] for s, lp in loops.items()}
    assert orders[None] == [0, 1, 2, 3]
    assert any(set(o[:2]) != {0, 1} for o in orders.values())
    # ... and yet the weights and every job row are the same, bit for bit.
    for loop in loops.values():
        assert loop.policy.weights.tobytes() == ref.policy.weights.tobytes()
        assert loop.events.jobs == ref.events.jobs
    assert ref.policy.version == 3

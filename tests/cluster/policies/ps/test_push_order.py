"""R²SP's permission order of pushes: the sequencer by hand, and the knob on the record."""

from __future__ import annotations

import pytest

from fl_r2sp.cluster.policies.ps.push_order import PushSequencer
from fl_r2sp.cluster.policies.ps.r2sp import R2SPParams, R2SPPolicy


def _sequencer(*permits: tuple[int, int]) -> PushSequencer:
    seq = PushSequencer()
    for w, k in permits:
        seq.permit(w, k)
    return seq


def test_an_overtaking_push_waits_for_the_earlier_permitted_ones() -> None:
    seq = _sequencer((0, 1), (1, 1), (2, 1), (0, 2))
    assert seq.arrive(1, 1) == []  # worker 0's push of the earlier permission is missing
    assert seq.arrive(2, 1) == []
    assert seq.waiting() == [(1, 1), (2, 1)] and seq.head() == (0, 1)
    assert seq.arrive(0, 1) == [(0, 1), (1, 1), (2, 1)]  # all three, in permission order
    assert seq.waiting() == [] and seq.head() == (0, 2)
    assert seq.arrive(0, 2) == [(0, 2)]  # in order: at once


def test_a_lost_worker_releases_the_pushes_waiting_for_it() -> None:
    seq = _sequencer((0, 1), (1, 1), (2, 1), (0, 2), (1, 2))
    assert seq.arrive(2, 1) == []
    assert seq.arrive(1, 1) == []
    assert seq.drop(0) == [(1, 1), (2, 1)]  # worker 0's (0, 1) and (0, 2) leave the sequence
    assert seq.head() == (1, 2)
    assert seq.arrive(1, 2) == [(1, 2)]


def test_a_lost_workers_own_arrived_push_is_not_released() -> None:
    seq = _sequencer((0, 1), (1, 1), (2, 1))
    assert seq.arrive(2, 1) == []
    assert seq.drop(2) == []  # still waiting for (0, 1); (2, 1) is gone
    assert seq.arrive(0, 1) == [(0, 1)]
    assert seq.arrive(1, 1) == [(1, 1)]


def test_flush_releases_what_arrived_whatever_is_missing() -> None:
    seq = _sequencer((0, 1), (1, 1), (2, 1))
    seq.arrive(2, 1)
    seq.arrive(1, 1)
    assert seq.flush() == [(1, 1), (2, 1)]
    assert seq.head() is None and seq.waiting() == []


def test_a_push_never_permitted_or_arriving_twice_is_refused() -> None:
    seq = _sequencer((0, 1), (1, 1))
    with pytest.raises(ValueError, match=r"\(0, 2\)"):
        seq.arrive(0, 2)
    seq.arrive(1, 1)
    with pytest.raises(ValueError, match="already arrived"):
        seq.arrive(1, 1)


def test_the_r2sp_knob() -> None:
    assert R2SPParams().push_order == "arrival"  # today's behaviour by default
    plain = R2SPPolicy(3, 8, R2SPParams())
    ordered = R2SPPolicy(3, 8, R2SPParams(push_order="permission"))
    assert (plain.push_order, plain.admission) == ("arrival", False)
    # The runtime's shards hold every push until the coordinator releases it.
    assert (ordered.push_order, ordered.admission) == ("permission", True)
    with pytest.raises(ValueError, match="push_order"):
        R2SPParams(push_order="fifo").validate()

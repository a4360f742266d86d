"""Job phases as intervals and their overlap."""

from __future__ import annotations

import pytest

from fl_r2sp.telemetry.phases import concurrency_stats, job_phases, max_and_mean_overlap


def test_full_row_is_cut_into_five_phases() -> None:
    row = dict(
        dispatch=0.0,
        pull_end=1.0,
        train_end=3.0,
        delay=0.5,
        push_start=3.5,
        push_end=4.0,
        wait_end=6.0,
    )
    assert job_phases(row) == [
        ("pull", 0.0, 1.0),
        ("train", 1.0, 3.0),
        ("delay", 3.0, 3.5),
        ("push", 3.5, 4.0),
        ("wait", 4.0, 6.0),
    ]


def test_delay_is_clipped_at_push_start_and_placed_without_train_end() -> None:
    assert ("delay", 3.0, 3.2) in job_phases(dict(train_end=3.0, delay=0.5, push_start=3.2))
    assert job_phases(dict(delay=1.0, push_start=5.0, push_end=6.0)) == [
        ("delay", 4.0, 5.0),
        ("push", 5.0, 6.0),
    ]


def test_wall_clock_row_becomes_one_round_trip() -> None:
    assert job_phases(dict(dispatch=2.0, push_end=5.0, delay="")) == [("job", 2.0, 5.0)]
    assert job_phases({"cid": 1}) == []
    assert job_phases(dict(dispatch="", pull_end=None)) == []


def test_overlap_counts_half_open_intervals() -> None:
    assert max_and_mean_overlap([(0.0, 1.0), (1.0, 2.0)]) == (1, 1.0)
    peak, mean = max_and_mean_overlap([(0.0, 1.0), (0.0, 2.0), (6.0, 9.0)])
    assert peak == 2 and mean == pytest.approx(6.0 / 5.0)  # (2*1 + 1*1 + 1*3) / (1 + 1 + 3)
    assert max_and_mean_overlap([]) == (0, None)
    assert max_and_mean_overlap([(1.0, 1.0)]) == (0, None)  # zero length: never open


def test_concurrency_stats_per_phase() -> None:
    jobs = [
        dict(dispatch=0.0, pull_end=2.0, push_start=3.0, push_end=4.0),
        dict(dispatch=1.0, pull_end=3.0, push_start=4.0, push_end=5.0),
        dict(dispatch=1.5, pull_end=2.5),
    ]
    s = concurrency_stats(jobs)
    assert s["max_concurrent_pull"] == 3
    # Levels 1, 2, 3, 2, 1 over widths 1, .5, .5, .5, .5: integral 5.0 over 3 busy seconds.
    assert s["mean_concurrent_pull"] == pytest.approx(5.0 / 3.0)
    assert s["max_concurrent_push"] == 1 and s["mean_concurrent_push"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown phases"):
        concurrency_stats(jobs, phases=("upload",))

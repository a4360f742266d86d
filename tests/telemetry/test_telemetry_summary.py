"""Run summaries from hand-made job rows, group records and traces."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from fl_r2sp.telemetry.eventlog import EventLog
from fl_r2sp.telemetry.summary import (
    apply_times,
    format_summary,
    inter_update_gaps,
    summarize_groups,
    summarize_jobs,
    summarize_run,
    trace_stats,
)

# pull 1/2/3, train 2/3/1, push 0.5/1/2, delay 0.5/0/1, wait 2/4, cycle 6/10.
JOBS = [
    dict(
        cid=0,
        job=0,
        tag=0,
        group=0,
        dispatch=0.0,
        pull_end=1.0,
        train_end=3.0,
        delay=0.5,
        push_start=3.5,
        push_end=4.0,
        wait_end=6.0,
        straggler=False,
        cosine=0.9,
    ),
    dict(
        cid=1,
        job=0,
        tag=0,
        group=1,
        dispatch=0.0,
        pull_end=2.0,
        train_end=5.0,
        delay=0.0,
        push_start=5.0,
        push_end=6.0,
        wait_end=10.0,
        straggler=True,
    ),
    dict(
        cid=0,
        job=1,
        tag=1,
        group=0,
        dispatch=6.0,
        pull_end=9.0,
        train_end=10.0,
        delay=1.0,
        push_start=11.0,
        push_end=13.0,
    ),
    dict(cid=1, job=1, tag=1, group=1, dispatch=10.0, failed="ttl expired"),
]

RECORDS = [
    dict(
        time=4.0,
        kind="group_collect",
        group=0,
        round=0,
        t_release=0.0,
        t_collect=4.0,
        round_time=4.0,
    ),
    dict(
        time=4.0, kind="group_apply", group=0, round=0, t_apply=4.0, turn_wait=0.0, T=4.0, gap=2.0
    ),
    dict(time=6.0, kind="group_collect", group=1, round=0, t_release=0.0, t_collect=6.0),
    dict(
        time=7.0, kind="group_apply", group=1, round=0, t_apply=7.0, turn_wait=1.0, T=4.2, gap=2.1
    ),
    dict(time=8.0, kind="eval", version=2, loss=1.0, accuracy=0.4, wall=0.1),
    dict(time=10.0, kind="group_apply", group=0, round=1, t_apply=10.0, turn_wait=0.5, T=4.5),
    dict(time=13.0, kind="group_apply", group=1, round=1, t_apply=13.0, turn_wait=0.5, T=4.6),
    dict(time=13.0, kind="eval", version=4, loss=0.8, accuracy=0.6, wall=0.2),
    dict(time=13.5, kind="blacklist", cid=1, t=13.5),
]


def test_job_averages_and_counts() -> None:
    s = summarize_jobs(JOBS)
    assert (s["num_jobs"], s["num_completed"], s["num_stragglers"], s["num_failed"]) == (4, 3, 1, 1)
    assert s["avg_pull_s"] == pytest.approx(2.0)
    assert s["median_pull_s"] == pytest.approx(2.0)
    assert s["p90_pull_s"] == pytest.approx(2.8)  # 2 + 0.8 * (3 - 2)
    assert s["avg_push_s"] == pytest.approx(3.5 / 3)
    assert s["median_push_s"] == pytest.approx(1.0)
    assert s["avg_train_s"] == pytest.approx(2.0)
    assert s["avg_delay_s"] == pytest.approx(0.5)
    assert s["avg_job_s"] == pytest.approx((4 + 6 + 7) / 3)
    assert s["avg_wait_s"] == pytest.approx(3.0)
    assert s["avg_cycle_s"] == pytest.approx(8.0)
    assert s["p90_cycle_s"] == pytest.approx(9.6)


def test_missing_fields_are_tolerated() -> None:
    rows = [
        {"cid": 0},  # nothing but an id
        {"cid": 1, "dispatch": "", "pull_end": None, "push_end": float("nan"), "straggler": ""},
        {"cid": 2, "dispatch": 1.0, "push_end": 3.0, "delay": 0.5},  # wall-clock row
        {"cid": 3, "dispatch": 5.0, "pull_end": 4.0},  # inconsistent: negative span dropped
    ]
    s = summarize_jobs(rows)
    assert (s["num_jobs"], s["num_completed"], s["num_stragglers"], s["num_failed"]) == (4, 1, 0, 0)
    assert s["avg_pull_s"] is None and s["p90_push_s"] is None
    assert s["avg_job_s"] == pytest.approx(2.0)
    assert s["avg_delay_s"] == pytest.approx(0.5)
    assert summarize_jobs([])["num_jobs"] == 0


def test_csv_round_trip_gives_same_numbers(tmp_path) -> None:
    log = EventLog()
    log.jobs.extend(dict(r) for r in JOBS)
    log.write(tmp_path)
    with open(tmp_path / "jobs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert summarize_jobs(rows) == pytest.approx(summarize_jobs(JOBS))


def test_group_figures() -> None:
    g = summarize_groups(RECORDS)
    assert g["num_group_rounds"] == 2 and g["num_applications"] == 4 and g["num_groups"] == 2
    assert g["avg_group_round_s"] == pytest.approx(5.0)  # 4 and (6 - 0) from t_collect - t_release
    assert g["avg_turn_wait_s"] == pytest.approx(0.5)
    assert g["avg_group_period_s"] == pytest.approx(6.0)  # 10 - 4 and 13 - 7
    assert g["final_T_s"] == pytest.approx(4.6)
    assert g["mean_gap_s"] == pytest.approx(3.0) and g["cv_gap"] == pytest.approx(0.0)
    assert summarize_groups([r for r in RECORDS if r["kind"] == "eval"]) == {}


def test_gaps_of_evenly_spaced_applies() -> None:
    recs = [{"kind": "group_apply", "time": t + 0.25, "t_apply": t} for t in (6.0, 0.0, 4.0, 2.0)]
    np.testing.assert_allclose(inter_update_gaps(recs), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(inter_update_gaps([6.0, 0.0, 4.0, 2.0]), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(inter_update_gaps(np.array([1.0, 4.0])), [3.0])
    assert inter_update_gaps([]).size == 0
    assert inter_update_gaps([{"kind": "eval", "time": 1.0}]).size == 0


def test_apply_times_fall_back_to_accepted_arrivals() -> None:
    times, source = apply_times(JOBS, [r for r in RECORDS if r["kind"] == "eval"])
    assert source == "update_arrivals"
    np.testing.assert_allclose(times, [4.0, 13.0])  # the straggler and the failed job are left out
    times, source = apply_times(JOBS, RECORDS)
    assert source == "group_apply"
    np.testing.assert_allclose(times, [4.0, 7.0, 10.0, 13.0])


def test_apply_times_of_fedbuff_and_asp_records() -> None:
    fedbuff = [{"kind": "client_update", "t": t, "version": 0} for t in (1.0, 2.0)]
    fedbuff += [
        {"kind": "buffer_apply", "t": 2.0, "version": 1},
        {"kind": "client_update", "t": 3.0, "version": 1},
        {"kind": "buffer_apply", "t": 5.0, "version": 2},
    ]
    times, source = apply_times([], fedbuff)
    assert source == "buffer_apply"
    np.testing.assert_allclose(times, [2.0, 5.0])
    # ASP logs the version after mixing: each rise is one global update.
    asp = [
        {"kind": "client_update", "time": t, "version": v}
        for t, v in ((1.0, 1), (1.5, 2), (2.5, 3), (4.0, 4))
    ]
    asp.append({"kind": "client_update", "time": 4.5})  # no version: ignored
    times, source = apply_times([], asp)
    assert source == "client_update"
    np.testing.assert_allclose(times, [1.0, 1.5, 2.5, 4.0])
    np.testing.assert_allclose(inter_update_gaps(asp), [0.5, 1.0, 1.5])


def test_trace_stats_on_known_trace() -> None:
    times = np.arange(6) * 0.5
    nbytes = np.array([0.0, 10.0, 20.0, 0.0, 10.0, 1e-9])  # the last bin is rounding residue
    s = trace_stats(times, nbytes, 0.5)
    assert s["peak_Bps"] == pytest.approx(40.0)
    assert s["mean_busy_Bps"] == pytest.approx(40.0 / 3 / 0.5)
    assert s["mean_Bps"] == pytest.approx(40.0 / 6 / 0.5)
    assert s["utilisation"] == pytest.approx(0.5)
    assert s["total_bytes"] == pytest.approx(40.0)
    assert s["duration_s"] == pytest.approx(3.0)
    assert trace_stats(np.array([]), np.array([]), 0.1)["peak_Bps"] is None
    with pytest.raises(ValueError, match="interval"):
        trace_stats(times, nbytes, 0.0)
    with pytest.raises(ValueError, match="shape"):
        trace_stats(times[:2], nbytes, 0.5)


def test_run_summary_is_plain_json() -> None:
    traces = {"server-egress": (np.arange(4) * 0.1, np.array([0.0, 5.0, 5.0, 0.0]))}
    s = summarize_run(JOBS, RECORDS, traces, 0.1)
    text = json.dumps(s, allow_nan=False)  # no NaN, no NumPy scalars
    assert json.loads(text) == s
    assert all(not isinstance(v, np.generic) for v in s.values())
    assert s["avg_round_s"] == pytest.approx(5.0) and s["round_source"] == "group_round"
    assert s["max_concurrent_pull"] == 2
    assert s["mean_concurrent_pull"] == pytest.approx(6.0 / 5.0)
    assert s["mean_update_gap_s"] == pytest.approx(3.0) and s["gap_source"] == "group_apply"
    assert s["final_accuracy"] == pytest.approx(0.6) and s["best_accuracy"] == pytest.approx(0.6)
    assert s["virtual_time_s"] == pytest.approx(13.5)
    assert s["server_egress_peak_Bps"] == pytest.approx(50.0)


def test_run_summary_without_groups_uses_client_cycle() -> None:
    s = summarize_run(JOBS, [], None)
    assert s["round_source"] == "client_cycle" and s["avg_round_s"] == pytest.approx(8.0)
    assert s["gap_source"] == "update_arrivals" and s["mean_update_gap_s"] == pytest.approx(9.0)
    assert "final_accuracy" not in s
    empty = summarize_run([], [], {})
    assert empty["num_jobs"] == 0 and empty["virtual_time_s"] is None
    json.dumps(empty, allow_nan=False)


def test_format_summary_prints_headlines_and_policy_keys() -> None:
    s = summarize_run(JOBS, RECORDS, None)
    s.update(
        strategy="fl-r2sp",
        policy_num_blacklisted=1,
        policy_blacklist_precision=1.0,
        policy_blacklist_recall=None,
    )
    text = format_summary(s)
    assert "final accuracy" in text and "0.6000" in text
    assert "avg pull" in text and "2.0000 s" in text
    assert "avg round" in text and "num blacklisted" in text and "blacklist precision" in text
    assert "blacklist recall" not in text  # None values are left out
    assert format_summary({}) == "run summary: (empty)"

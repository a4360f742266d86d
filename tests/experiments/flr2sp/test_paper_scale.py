"""The paper-size item's arithmetic and the parser of the GPU checks' benchmark logs."""

from __future__ import annotations

import pytest

from experiments.flr2sp.executor_figures import parse_logs, stages
from experiments.flr2sp.fig15 import filter_pairs
from experiments.flr2sp.paper_scale import missing_row, overlaps, run_row
from experiments.flr2sp.report.paper_size import missing_lines

# bench_executor's layout: a 28-wide label, right-aligned columns (widths 10, 8, 8, 8, 9 x 4).
HEAD = (
    f"{'':<28} {'samples/s':>10} {'x limit':>8} {'round s':>8} {'start s':>8} "
    f"{'max|dw|':>9} {'med|dw|':>9} {'max rel':>9} {'rerun':>9}"
)
CHECKS = "\n".join(
    [
        "=== env (limit 120s, 480s of budget left) ===",
        "GPU 0: NVIDIA H999 (UUID: GPU-x)",
        "3.12.3 (main, Aug 31 2026) [GCC]",
        "2.11.0+cu130 True 2.5.2",
        "=== env: exit 0 after 25s ===",
        "=== bench (limit 200s, 455s of budget left) ===",
        "load average before: 0.50, cores: 16, data: somewhere",
        "",
        "round: 8 clients x tau 10 x batch 32 = 2,560 samples, model cnn, augment False, "
        "best of 2 interleaved pass(es)",
        HEAD,
        "-" * len(HEAD),
        f"{'limit (batch 512, 2 thr)':<28} {1000:>10.0f} {1.0:>8.2f} {2.6:>8.1f}",
        f"{'serial':<28} {250:>10.0f} {4.0:>8.2f} {10.2:>8.1f} {0.0:>8.1f} "
        f"{0:>9.2g} {0:>9.2g} {0:>9.2g} {'same':>9}",
        f"{'batched (4 proc.)':<28} {500:>10.0f} {2.0:>8.2f} {5.1:>8.1f} {0.3:>8.1f} "
        f"{3e-6:>9.2g} {1e-7:>9.2g} {2e-4:>9.2g} {'same':>9}",
        f"{'serial, start +1 ulp (4 cl.)':<28} {'':>10} {'':>8} {'':>8} {'':>8} "
        f"{5e-6:>9.2g} {2e-8:>9.2g} {3e-4:>9.2g}",
        "",
        "peak resident memory, MiB (fresh process each, tau 2):",
        "executor   clients    main           workers   total",
        "----------------------------------------------------",
        "batched          8     300         100 + 120     520",
        "load average after: 0.7",
        "=== bench: exit 0 after 60s ===",
        "=== tolerance (limit 120s, 400s of budget left) ===",
        "Traceback: ValueError",
        "=== tolerance: exit 1 after 70s ===",
        "total 90s",
    ]
)


def test_stages_keep_limits_exits_and_the_lines_outside_them() -> None:
    parts = stages(CHECKS)
    assert [(s["name"], s["limit_s"], s["exit"], s["after_s"]) for s in parts] == [
        ("env", 120, 0, 25),
        ("bench", 200, 0, 60),
        ("tolerance", 120, 1, 70),
        ("log", None, None, None),
    ]
    assert parts[-1]["lines"] == ["total 90s"]


def test_bench_table_is_parsed_by_column_not_by_position() -> None:
    data = parse_logs(CHECKS, {})
    assert data["environment"] == dict(
        gpu="NVIDIA H999", python="3.12.3", torch="2.11.0+cu130", cuda_available=True
    )
    assert data["total_s"] == 90
    (b,) = data["benches"]
    assert (b["stage"], b["clients"], b["tau"], b["samples"], b["cores"]) == (
        "bench",
        8,
        10,
        2560,
        16,
    )
    limit, serial, batched, ulp = b["rows"]
    assert limit == dict(
        label="limit (batch 512, 2 thr)", samples_per_s=1000, x_limit=1.0, round_s=2.6
    )
    assert serial["rerun"] == "same" and serial["max_dw"] == 0.0
    assert (batched["samples_per_s"], batched["x_limit"], batched["start_s"]) == (500, 2.0, 0.3)
    assert (batched["max_dw"], batched["med_dw"], batched["max_rel"]) == (3e-6, 1e-7, 2e-4)
    # The ulp row has no rate: its three values land under the weight-difference columns.
    assert ulp == dict(label="serial, start +1 ulp (4 cl.)", max_dw=5e-6, med_dw=2e-8, max_rel=3e-4)
    assert b["memory"] == [
        dict(
            executor="batched",
            clients=8,
            main_mib=300.0,
            workers="100 + 120",
            total_mib=520.0,
            device_mib=None,
        )
    ]


def test_a_value_under_no_column_is_an_error() -> None:
    bad = CHECKS.replace(f"{'serial':<28} {250:>10.0f}", f"{'serial':<28} {250:>9.0f} ")
    with pytest.raises(ValueError, match="under no column"):
        parse_logs(bad, {})


def test_overlaps_count_runs_computing_at_one_instant() -> None:
    # Intervals [end - run_seconds, end]: [0, 10], [5, 15], [12, 20], [6, 8].
    rows = [
        dict(end_unix=10.0, run_seconds=10.0),
        dict(end_unix=15.0, run_seconds=10.0),
        dict(end_unix=20.0, run_seconds=8.0),
        dict(end_unix=None, run_seconds=3.0),
    ]
    others = [dict(end_unix=8.0, run_seconds=2.0)]
    # At t = 6: [0, 10], [5, 15] and [6, 8] run; [12, 20] meets only [5, 15].
    assert overlaps(rows, others) == [3, 3, 2, None]
    assert overlaps(rows) == [2, 2, 2, None]


def test_filter_pairs_use_only_seeds_with_both_runs() -> None:
    rows = [
        dict(model="cnn", scheme="bsp", seed=0, final_accuracy=0.4),
        dict(model="cnn", scheme="bsp-nofilter", seed=0, final_accuracy=0.5),
        dict(model="cnn", scheme="bsp", seed=1, final_accuracy=0.3),
    ]
    (pair,) = filter_pairs(rows)
    assert (pair["seed"], pair["gain_points"]) == (0, pytest.approx(-0.1))
    assert pair["gain_relative"] == pytest.approx(-0.25)  # -0.1 / 0.4


def test_run_row_counts_bsp_round_equivalents() -> None:
    rec = dict(
        summary=dict(global_updates=80, num_groups=8, final_accuracy=0.3),
        config={"strategy": "fl-r2sp", "num-partitions": 128, "fraction": 0.75},
        run_seconds=50.0,
        computed_at_unix=100.0,
    )
    row = run_row("cnn", "fl-r2sp", 0, rec)
    # 80 group applications of 8 groups = 10 rounds; 50 s / 10.
    assert (row["rounds"], row["wall_s_per_round"]) == (10.0, 5.0)
    assert (row["executor"], row["compute_device"]) == ("serial", "auto")


def test_missing_runs_of_a_model_that_never_ran_are_one_command() -> None:
    d = dict(
        runs=[dict(model="cnn")],
        missing=[missing_row("cnn", "asp", 1), missing_row("cnn", "asp", 2)]
        + [missing_row("lstm", s, k) for s in ("bsp", "asp") for k in (0, 1)],
    )
    lines = missing_lines(d)[2:]
    assert lines == [
        "- cnn `asp`, seeds 1,2: `python -m experiments.flr2sp.run_parallel --scale paper "
        "--models cnn "
        "--seeds 1,2 --schemes asp --executor batched --compute-device cuda`",
        "- lstm every scheme (none ran), seeds 0,1: "
        "`python -m experiments.flr2sp.run_parallel --scale "
        "paper --models lstm --seeds 0,1 --schemes bsp,asp --executor batched "
        "--compute-device cuda`",
    ]


def test_memory_rows_with_a_device_column() -> None:
    from experiments.flr2sp.executor_figures import memory

    lines = [
        "peak resident memory, MiB (fresh process each, tau 2):",
        "executor   clients    main           workers   total  device",
        "-" * 60,
        "batched        128    2093                 -    2093     900",
        "processes     1000     400         100 + 120     620       -",
        "load average after: 0.7",
    ]
    assert [(m["workers"], m["total_mib"], m["device_mib"]) for m in memory(lines)] == [
        ("-", 2093.0, 900.0),
        ("100 + 120", 620.0, None),
    ]

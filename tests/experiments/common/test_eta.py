"""A sweep's progress line: runs done of planned, and the time left from the computed runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.common import eta


def test_the_estimate_is_the_mean_computed_run_times_the_runs_left() -> None:
    eta.plan(5)
    assert eta.count() == "[1/5]"  # cached: no estimate yet
    assert eta.count(600.0) == "[2/5, about 30 min left]"  # 3 left x 10 min
    assert eta.count(1800.0) == "[3/5, about 40 min left]"  # 2 left x 20 min
    eta.count(60.0)
    assert eta.count(60.0) == "[5/5]" and eta.state() == (5, 5, 4)


def test_hours_and_an_unknown_plan() -> None:
    eta.plan(20)
    assert eta.count(1200.0) == "[1/20, about 6 h 20 min left]"
    eta.plan(0)
    assert eta.count(5.0) == "[1]"
    with pytest.raises(ValueError, match="at least 0"):
        eta.plan(-1)


def test_an_item_counts_a_cached_run_and_prints_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from experiments.common import provenance
    from experiments.common.run_cache import build_config, cached_run, config_key, parse_args

    monkeypatch.delenv(provenance.REUSE_ENV, raising=False)
    cfg = build_config("training", "smoke", 0, strategy="bsp", model="mlp")
    key = provenance.run_key(config_key(cfg), provenance.code_version())
    (tmp_path / "_runs").mkdir()
    rec = {"label": "r", "seed": 0, "key": key, "config": cfg.to_run_config(), "summary": {},
           "history": [], "code_version": provenance.code_version()}  # fmt: skip
    (tmp_path / "_runs" / f"r-s0-{key}.json").write_text(json.dumps(rec))
    args = parse_args("fig15", None, ["--scale", "smoke", "--out", str(tmp_path)])
    eta.plan(2)
    assert cached_run(args, "training", "r", 0, strategy="bsp", model="mlp") is not None
    assert "fig15: [1/2] r seed 0: cached" in capsys.readouterr().out
    assert eta.state() == (2, 1, 0)  # skipped, not computed: no estimate from it

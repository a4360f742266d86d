"""Unit tests of the experiments' shared helpers (hand-computed values, no runs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.common.conf import MAIN_JOB, SCALES, round_units, scale_settings
from experiments.common.run_cache import (
    aggregate,
    build_config,
    config_key,
    mean_std,
    parse_args,
    rekey_runs,
    write_csv,
)
from experiments.flr2sp.fig15 import SCHEMES
from experiments.flr2sp.fig17 import peak
from experiments.flr2sp.filter_rules import CASES
from experiments.flr2sp.outliers import CLEAN
from experiments.flr2sp.runs import _label, comm, ratio
from fl_r2sp.fl.config import RunConfig


def test_round_units_per_strategy():
    # 32 clients, C = 0.75 -> 24 collected updates per round.
    assert round_units("bsp", 32, 1, 0.75) == 1
    assert round_units("fl-r2sp", 32, 4, 0.75) == 4
    assert round_units("asp", 32, 1, 0.75) == 24
    assert round_units("fedasync", 32, 1, 0.75) == 24
    assert round_units("fedbuff", 32, 1, 0.75, buffer_size=10) == 3  # ceil(24 / 10)
    assert round_units("asp", 10, 1, 0.75) == 8  # ceil(7.5)


def test_build_config_applies_rounds_and_bsp_single_group():
    cfg = build_config("timing", "laptop", 3, strategy="bsp", model="resnet20")
    assert (cfg.num_partitions, cfg.groups, cfg.seed) == (128, 1, 3)
    assert (cfg.max_updates, cfg.eval_every) == (12, 1)
    assert cfg.dataset == "cifar10" and cfg.timing_only
    fl = build_config("timing", "laptop", 0, strategy="fl-r2sp", model="cnn", rounds=5)
    assert (fl.groups, fl.max_updates, fl.eval_every) == (8, 40, 8)
    asp = build_config("training", "smoke", 0, strategy="asp", model="mlp")
    assert asp.dataset == "digits"
    assert (asp.max_updates, asp.eval_every) == (4 * 6, 6)  # ceil(0.75 * 8) = 6 per round


@pytest.mark.parametrize("scale", SCALES)
def test_paper_items_keep_the_papers_filter_rule(scale):
    # The engine's default rule is `relative` since the filter-rules study (and its filter
    # off); every item built on the scale settings keeps the paper's rule, filter on or off,
    # so its configuration (and the stored configurations of its cached runs) are those from
    # before the change.
    assert RunConfig().outlier_rule != "paper"
    cfgs = [build_config(family, scale, 0) for family in ("timing", "training")]
    cfgs += [build_config("training", scale, 0, **diff) for diff in SCHEMES.values()]
    cfgs += [build_config("training", scale, 0, **diff) for diff in CLEAN.values()]
    assert all(cfg.outlier_rule == "paper" for cfg in cfgs)
    assert [cfg.outlier_filter for cfg in cfgs[:2]] == [True, True]
    # The filter-rules item names each case's rule itself (the filter-off case keeps the base's).
    rules = {c: build_config("training", scale, 0, **k).outlier_rule for c, k in CASES.items()}
    assert rules == {c: k.get("outlier_rule", "paper") for c, k in CASES.items()}


def test_config_key_ignores_output_only_fields_and_defaults():
    a = build_config("timing", "smoke", 0, strategy="bsp", model="cnn")
    assert config_key(a) == config_key(a.replace(run_dir="elsewhere", plots=True, data_dir="/x"))
    assert config_key(a) != config_key(a.replace(seed=1))
    assert len(config_key(a)) == 12
    # A knob missing from an older cache's config counts as its default.
    d = a.to_run_config()
    d.pop("strict-order")
    assert config_key(d) == config_key(a)


def test_rekey_runs_moves_files_to_the_current_key(tmp_path):
    import json

    cfg = build_config("timing", "smoke", 0, strategy="bsp", model="cnn")
    runs = tmp_path / "_runs"
    runs.mkdir()
    rec = {"label": "t-bsp-cnn", "seed": 0, "key": "old", "config": cfg.to_run_config()}
    (runs / "t-bsp-cnn-s0-old.json").write_text(json.dumps(rec))
    (runs / "t-bsp-cnn-s0-old.jobs.json.gz").write_bytes(b"x")
    assert rekey_runs(tmp_path) == 1 and rekey_runs(tmp_path) == 0
    key = config_key(cfg)
    assert json.loads((runs / f"t-bsp-cnn-s0-{key}.json").read_text())["key"] == key
    assert (runs / f"t-bsp-cnn-s0-{key}.jobs.json.gz").read_bytes() == b"x"


def test_mean_std_and_aggregate():
    assert mean_std([1.0, 2.0, 3.0]) == (2.0, 1.0, 3)
    assert mean_std([5.0, None]) == (5.0, 0.0, 1)
    assert mean_std([None, math.nan]) == (None, None, 0)
    rows = [dict(m="a", x=1.0), dict(m="a", x=3.0), dict(m="b", x=None)]
    agg = {r["m"]: r for r in aggregate(rows, ("m",), ("x",))}
    assert agg["a"]["x_mean"] == 2.0 and agg["a"]["x_std"] == pytest.approx(math.sqrt(2))
    assert agg["a"]["n"] == 2
    assert agg["b"]["x_mean"] is None and agg["b"]["n"] == 1


def test_peak_rebins_tenth_second_trace():
    # 0.1 s bins: a burst of 3 bins x 1 MB; at 1 s bins it spreads over the second.
    nbytes = np.zeros(20)
    nbytes[2:5] = 1e6
    assert peak(nbytes, 0.1) == pytest.approx(1e7)
    assert peak(nbytes, 1.0) == pytest.approx(3e6)


def test_comm_ratio_label():
    assert comm({"avg_pull_s": 2.0, "avg_push_s": 0.5}) == 2.5
    assert comm({"avg_pull_s": None, "avg_push_s": 0.5}) is None
    assert ratio(3.0, 1.5) == 2.0 and ratio(1.0, 0.0) is None and ratio(None, 1.0) is None
    assert _label("t", "bsp", "cnn", {"fraction": 0.5}) == "t-bsp-cnn-fraction0p5"


def test_parse_args_defaults_and_errors(capsys):
    args = parse_args("table5", None, [])
    assert (args.scale, args.seeds, str(args.out)) == ("laptop", (0, 1, 2), "records/results")
    assert parse_args("x", None, ["--seeds", "4,5", "--models", "cnn"]).only_models == ("cnn",)
    with pytest.raises(SystemExit):
        parse_args("x", None, ["--seeds", "a,b"])
    with pytest.raises(SystemExit):
        parse_args("x", None, ["--scale", "huge"])


def test_scale_settings_errors():
    with pytest.raises(ValueError, match="unknown scale"):
        scale_settings("timing", "huge")
    with pytest.raises(ValueError, match="family"):
        scale_settings("gpu", "smoke")


def test_main_job_setting_is_the_apps_defaults(monkeypatch):
    # `flwr run .` runs RunConfig's defaults (pyproject mirrors them): the main-job setting
    # builds exactly that run, with `auto` resolved and plots (output only) off.
    cfg = build_config("training", MAIN_JOB, 0)
    want = RunConfig().to_run_config()
    got = cfg.to_run_config()
    assert {k for k in want if want[k] != got[k]} == {"model", "plots"}
    assert (cfg.model, cfg.dataset, cfg.max_updates, cfg.eval_every) == ("mlp", "digits", 60, 4)
    assert cfg.convergence_window == 0
    assert scale_settings("training", MAIN_JOB)["models"] == ("mlp",)
    with pytest.raises(ValueError, match="unknown scale"):  # a training setting only
        scale_settings("timing", MAIN_JOB)
    with pytest.raises(SystemExit):  # not a --scale of every item ...
        parse_args("table5", None, ["--scale", MAIN_JOB])
    # ... only of those that add it.
    assert parse_args("x", None, ["--scale", MAIN_JOB], scales=(MAIN_JOB,)).scale == MAIN_JOB
    # A default that is not whole rounds with one evaluation each cannot be reproduced.
    odd = RunConfig(eval_every=5)
    monkeypatch.setattr("fl_r2sp.fl.config.RunConfig", lambda: odd)
    with pytest.raises(ValueError, match="whole rounds"):
        scale_settings("training", MAIN_JOB)


def test_write_csv_union_of_keys(tmp_path):
    path = write_csv(tmp_path / "a.csv", [dict(a=1, b=0.123456789), dict(c=None)])
    assert path.read_text().splitlines() == ["a,b,c", "1,0.123457,", ",,"]

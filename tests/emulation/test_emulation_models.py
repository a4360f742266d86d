"""Delay, device and availability models: closed forms, determinism, bad specs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from fl_r2sp.emulation.availability import make_availability
from fl_r2sp.emulation.delays import make_delay
from fl_r2sp.emulation.devices import make_device_model
from fl_r2sp.emulation.rng import STREAM_DELAY, rng_for

#: Sample size for moment checks, and the relative tolerance it supports
#: (>5 standard errors for the heaviest-tailed case tested).
N_SAMPLES = 40_000
MOMENT_RTOL = 0.05


@pytest.mark.parametrize(
    ("spec", "mean", "median"),
    [
        ("lognormal(mu=-2,sigma=1)", math.exp(-2 + 0.5), math.exp(-2)),
        ("exponential(mean=0.2)", 0.2, 0.2 * math.log(2)),
        # mean 0.2 + 0.1 phi(-2) / (1 - Phi(-2));
        # median 0.2 + 0.1 Phi^-1(Phi(-2) + (1 - Phi(-2)) / 2)
        ("normal(mu=0.2,sigma=0.1,low=0,high=1)", 0.205525, 0.202852),
        ("pareto(shape=2.5,scale=0.1)", 2.5 * 0.1 / 1.5, 0.1 * 2 ** (1 / 2.5)),
        ("constant(value=0.1)", 0.1, 0.1),
        ("none", 0.0, 0.0),
    ],
)
def test_delay_closed_forms_match_samples(spec: str, mean: float, median: float) -> None:
    model = make_delay(spec)
    assert model.mean() == pytest.approx(mean, rel=1e-3, abs=1e-12)
    assert model.quantile(0.5) == pytest.approx(median, rel=1e-3, abs=1e-12)
    rng = np.random.default_rng(11)
    x = np.array([model.sample(rng) for _ in range(N_SAMPLES)])
    assert x.mean() == pytest.approx(mean, rel=MOMENT_RTOL, abs=1e-12)
    for q in (0.25, 0.5, 0.9):
        assert np.quantile(x, q) == pytest.approx(model.quantile(q), rel=MOMENT_RTOL, abs=1e-12)
    assert (x >= 0).all()


def test_default_lognormal_is_the_papers() -> None:
    model = make_delay("lognormal")
    assert model.mean() == pytest.approx(0.2231, abs=1e-4)
    assert model.quantile(0.75) == pytest.approx(0.2657, abs=1e-4)


def test_truncated_normal_stays_in_bounds() -> None:
    model = make_delay("normal(mu=0.2,sigma=1,low=0.1,high=0.3)")
    rng = np.random.default_rng(0)
    x = np.array([model.sample(rng) for _ in range(2000)])
    assert x.min() >= 0.1 and x.max() <= 0.3


def test_sample_for_depends_only_on_seed_client_job() -> None:
    model = make_delay("lognormal(mu=-2,sigma=1)")
    first = model.sample_for(3, 17, 5)
    _ = [model.sample_for(3, c, j) for c in range(5) for j in range(5)]  # unrelated draws
    assert model.sample_for(3, 17, 5) == first
    assert first == rng_for(3, STREAM_DELAY, 17, 5).lognormal(-2, 1)
    assert model.sample_for(3, 17, 6) != first
    assert model.sample_for(4, 17, 5) != first


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("gamma(k=2)", "unknown delay"),
        ("lognormal(mu=-2,sigma=-1)", "sigma"),
        ("lognormal(mu=x)", "not a number"),
        ("lognormal(mu=-2,tau=1)", "unknown parameter"),
        ("exponential", "needs parameter 'mean'"),
        ("exponential(mean=0)", "mean"),
        ("normal(mu=0.2,sigma=0.1,low=-1)", "low"),
        ("normal(mu=-50,sigma=1,low=0,high=0.1)", "no mass"),
        ("pareto(shape=0,scale=1)", "shape"),
        ("constant(value=-1)", "value"),
        ("lognormal(mu=-2,sigma=1", "malformed"),
        ("lognormal(mu)", "malformed"),
        ("lognormal(mu=1,mu=2)", "twice"),
    ],
)
def test_bad_delay_specs_raise(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_delay(spec)


def test_delay_trace_replay(tmp_path: Path) -> None:
    path = tmp_path / "delays.csv"
    path.write_text("client,round,delay\n0,0,0.5\n0,1,0.7\n1,0,0.1\n")
    model = make_delay(f"trace(path={path})")
    assert model.sample_for(0, 0, 1) == 0.7  # exact row
    assert model.sample_for(0, 0, 3) == 0.7  # client 0 cycled: [0.5, 0.7][3 % 2]
    assert model.sample_for(0, 1, 5) == 0.1
    assert model.sample_for(0, 9, 1) == 0.7  # unknown client: file order [.5,.7,.1][(9+1) % 3]
    assert model.mean() == pytest.approx(1.3 / 3)
    single = tmp_path / "single.csv"
    single.write_text("0.2\n0.4\n")
    assert make_delay(f"trace(path={single})").sample_for(0, 1, 0) == 0.4


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "no data"),
        ("client,round,delay\n", "no data"),
        ("client,round,delay\n0,0\n", "line 2"),
        ("client,round,delay\n0,0,abc\n", "not a number"),
        ("client,when,delay\n0,0,1\n", "header"),
        ("0.1\n-0.2\n", "negative"),
        ("client,round\n0,1\n", "'delay' column"),
    ],
)
def test_malformed_delay_traces_raise(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        make_delay(f"trace(path={path})")


def test_missing_trace_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        make_delay(f"trace(path={tmp_path / 'nope.csv'})")


def test_device_models() -> None:
    assert make_device_model("profile", 0.07).seconds_per_iteration(0, 5) == 0.07
    assert make_device_model("homogeneous", 0.07).seconds_per_iteration(1, 9) == 0.07
    logn = make_device_model("lognormal(sigma=0.5)", 0.07)
    speeds = np.array([logn.seconds_per_iteration(0, c) for c in range(4000)])
    assert np.median(speeds) == pytest.approx(0.07, rel=MOMENT_RTOL)
    assert logn.seconds_per_iteration(0, 7) == logn.seconds_per_iteration(0, 7)
    tiers = make_device_model("profiles(fast=0.5:0.25,slow=2:0.25)", 0.1)
    values = np.array([tiers.seconds_per_iteration(0, c) for c in range(4000)])
    assert set(np.round(values, 12)) == {0.05, 0.1, 0.2}
    assert (values == 0.05).mean() == pytest.approx(0.25, abs=0.03)
    assert (values == 0.2).mean() == pytest.approx(0.25, abs=0.03)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("gpu", "unknown device"),
        ("lognormal(sigma=-1)", "sigma"),
        ("profiles(fast=0.5)", "multiplier:share"),
        ("profiles(fast=0.5:0.8,slow=2:0.8)", "sum"),
        ("profiles", "no tier"),
        ("profile(x=1)", "unknown parameter"),
    ],
)
def test_bad_device_specs_raise(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_device_model(spec, 0.07)
    with pytest.raises(ValueError, match="base"):
        make_device_model("profile", 0.0)


def test_bernoulli_availability() -> None:
    model = make_availability("bernoulli(p=0.25,down=30)")
    hits = [model.interruption(1, c, 3, 10.0, 20.0) for c in range(4000)]
    interrupted = [h for h in hits if h is not None]
    assert len(interrupted) / len(hits) == pytest.approx(0.25, abs=0.03)
    offs = np.array([h[0] for h in interrupted])
    downs = np.array([h[1] - h[0] for h in interrupted])
    assert offs.min() >= 10.0 and offs.max() <= 20.0
    assert downs.mean() == pytest.approx(30.0, rel=0.1)
    assert model.interruption(1, 0, 3, 10.0, 20.0) == hits[0]
    assert make_availability("none").interruption(0, 0, 0, 0.0, 1.0) is None
    assert make_availability("bernoulli(p=0)").interruption(0, 0, 0, 0.0, 1.0) is None


def test_trace_availability(tmp_path: Path) -> None:
    path = tmp_path / "avail.csv"
    path.write_text("client,offline_start,offline_end\n2,5,9\n2,1,3\n")
    model = make_availability(f"trace(path={path})")
    assert model.interruption(0, 2, 0, 0.0, 2.0) == (1.0, 3.0)
    assert model.interruption(0, 2, 0, 4.0, 6.0) == (5.0, 9.0)
    assert model.interruption(0, 2, 0, 6.0, 7.0) == (6.0, 9.0)  # starts while offline
    assert model.interruption(0, 2, 0, 3.0, 4.5) is None
    assert model.interruption(0, 1, 0, 0.0, 100.0) is None


@pytest.mark.parametrize(
    ("spec_or_text", "match"),
    [
        ("bernoulli(p=1.5)", "probability"),
        ("bernoulli(p=0.1,down=0)", "down"),
        ("flaky", "unknown availability"),
        ("client,offline_start,offline_end\n1,5,4\n", "offline_end <= offline_start"),
        ("client,offline_start\n1,5\n", "needs columns"),
    ],
)
def test_bad_availability_raises(tmp_path: Path, spec_or_text: str, match: str) -> None:
    spec = spec_or_text
    if "\n" in spec_or_text:
        path = tmp_path / "a.csv"
        path.write_text(spec_or_text)
        spec = f"trace(path={path})"
    with pytest.raises(ValueError, match=match):
        make_availability(spec)

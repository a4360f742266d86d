"""The thin Flower adapters, on what can be built outside a running app."""

from __future__ import annotations

import numpy as np
import pytest
from flwr.app import ArrayRecord, MetricRecord

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.grid_transport import mismatch
from fl_r2sp.fl.flower.strategy import BSP, FLR2SP, FedBuff, _wrap_evaluate_fn, strategy_for
from fl_r2sp.fl.protocol import validate_weights


def test_strategy_classes_pin_their_scheme_and_keep_other_knobs() -> None:
    s = BSP(RunConfig(strategy="fl-r2sp", fraction=0.5))
    assert s.cfg.strategy == "bsp" and s.cfg.fraction == 0.5
    assert FedBuff(buffer_size=4).cfg.buffer_size == 4
    assert isinstance(strategy_for(RunConfig()), FLR2SP)


def test_summary_logs_the_knobs_of_the_filter_rule_in_use(caplog) -> None:
    # The main job's start log shows the default filter: off, with the knobs of the relative
    # rule it uses when switched on (k, floor and cap).
    with caplog.at_level("INFO", logger="fl_r2sp"):
        FLR2SP().summary()
        FLR2SP(outlier_filter=True, outlier_rule="paper").summary()
    lines = [r.getMessage() for r in caplog.records if "outlier filter" in r.getMessage()]
    assert lines[0].endswith(
        "outlier filter False (rule relative, k=3, floor=0.1, cap=0.25, 3 rounds, warm-up 0)"
    )
    assert lines[1].endswith("outlier filter True (rule paper, beta=0.50, 3 rounds, warm-up 0)")


def test_strategy_rejects_invalid_knobs_before_running() -> None:
    with pytest.raises(ValueError, match="fraction"):
        FLR2SP(fraction=1.5)


def test_mismatch_names_count_shape_and_dtype() -> None:
    template = [np.zeros((2, 3), np.float32), np.zeros(4, np.int64)]
    assert mismatch([np.ones((2, 3), np.float32), np.ones(4, np.int64)], template) is None
    assert "2 arrays" not in (mismatch(template, template) or "")
    assert "1 arrays, expected 2" in mismatch(template[:1], template)
    assert "shape (3, 2)" in mismatch([np.zeros((3, 2), np.float32), template[1]], template)
    assert "dtype float64" in mismatch([np.zeros((2, 3)), template[1]], template)


@pytest.mark.parametrize(
    ("weights", "needle"),
    [
        (None, "no weights"),
        (np.zeros(3, np.float32), "wrong shape"),
        (np.zeros(4, np.int32), "wrong dtype"),
        (np.array([0, 1, np.inf, 2], np.float32), "non-finite"),
    ],
)
def test_validate_weights_rejects_bad_updates(weights, needle: str) -> None:
    assert needle in validate_weights(weights, 4)


def test_validate_weights_accepts_a_good_update() -> None:
    assert validate_weights(np.zeros(4, np.float32), 4) is None


def test_flower_evaluate_fn_is_adapted_to_loss_and_accuracy() -> None:
    template = [np.zeros((2,), np.float32), np.zeros((1, 1), np.float32)]
    seen = []

    def evaluate_fn(rnd: int, arrays: ArrayRecord) -> MetricRecord:
        seen.append((rnd, [a.shape for a in arrays.to_numpy_ndarrays()]))
        return MetricRecord({"accuracy": 0.5, "loss": 1.25})

    evaluator = _wrap_evaluate_fn(evaluate_fn, template)
    assert evaluator.score(0, np.arange(3, dtype=np.float32)) == (1.25, 0.5)
    assert evaluator.score(7, np.arange(3, dtype=np.float32)) == (1.25, 0.5)
    assert seen == [(0, [(2,), (1, 1)]), (7, [(2,), (1, 1)])]  # the version it is given

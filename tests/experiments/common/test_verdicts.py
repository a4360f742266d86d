"""The verdict rules at their edges, on hand-computed values.

Reductions: the paper's sign and ours / paper's in [2/3, 3/2] is *reproduced*; the sign outside
the band is *same direction*; the other sign is *not reproduced*; a zero paper value has no sign.
Accuracies: within 0.02 absolute is *comparable*.
"""

from __future__ import annotations

import pytest

from experiments.common import verdicts


@pytest.mark.parametrize(
    ("ours", "paper", "words"),
    [
        (0.2, 0.3, "reproduced"),  # exactly 2/3 of the paper's cut
        (0.45, 0.3, "reproduced"),  # exactly 3/2
        (0.135, 0.09, "reproduced"),  # 3/2 too, 1.5000000000000002 in floats
        (0.199, 0.3, "same direction"),  # just below 2/3
        (0.451, 0.3, "same direction"),  # just above 3/2
        (0.458, 0.223, "same direction"),  # Table IV's old per-round cut: 2.05x the paper's
        (-0.16, 0.224, "**not reproduced**"),  # a reported case: 16% slower against a 22.4% cut
        (0.0, 0.224, "**not reproduced**"),  # no reduction at all has not the paper's sign
        (-0.3, -0.3, "reproduced"),  # a negative paper value: the same sign is what counts
        (0.3, -0.3, "**not reproduced**"),
        (0.1, 0.0, "n/a"),  # a zero paper value has no sign to share
        (None, 0.3, "n/a"),
    ],
)
def test_reduction_rule_edges(ours: float | None, paper: float, words: str) -> None:
    assert verdicts.reduction_label(ours, paper) == words


def test_reduction_verdict_text_and_one_seed() -> None:
    assert verdicts.reduction_verdict(0.2, 0.3) == "0.67x (reproduced)"
    assert verdicts.reduction_verdict(-0.16, 0.224, seeds=1) == (
        "-0.71x (**not reproduced**, one seed)"
    )
    assert verdicts.reduction_verdict(0.6, 0.3, seeds=3) == "2.00x (same direction)"
    assert verdicts.reduction_verdict(0.3, 0.3, partly=True) == (
        "1.00x (within band, from fitted inputs)"
    )
    assert verdicts.reduction_verdict(0.1, 0.0) == "n/a"


def test_reduction_of_a_normalised_time() -> None:
    # R²SP at 0.538 of BSP's iteration time is a 46.2% cut: 1.54x the paper's 30% (0.7 of BSP).
    cut = verdicts.reduction_of_norm(0.538)
    assert cut == pytest.approx(0.462)
    assert verdicts.reduction_label(cut, verdicts.reduction_of_norm(0.7)) == "same direction"
    # 1.63x the second-best scheme's time is a negative cut against the paper's 0.831x.
    assert verdicts.reduction_label(
        verdicts.reduction_of_norm(1.63), verdicts.reduction_of_norm(0.831)
    ) == ("**not reproduced**")
    assert verdicts.reduction_of_norm(None) is None


@pytest.mark.parametrize(
    ("ours", "other", "same"),
    [
        (0.80, 0.78, True),  # exactly 0.02 apart (0.020000000000000018 in floats)
        (0.78, 0.80, True),
        (0.801, 0.78, False),  # 0.021
        (0.5, 0.5, True),
        (None, 0.5, None),
    ],
)
def test_comparable_accuracy_edges(ours: float | None, other: float, same: bool | None) -> None:
    assert verdicts.comparable(ours, other) is same


def test_accuracy_verdict_text() -> None:
    assert verdicts.accuracy_verdict(0.80, 0.78) == "+0.020 (comparable)"
    assert verdicts.accuracy_verdict(0.70, 0.78, seeds=1) == "-0.080 (**not comparable**, one seed)"
    assert verdicts.accuracy_verdict(None, 0.78) == "n/a"


@pytest.mark.parametrize(
    ("r", "inside"),
    [(2 / 3, True), (1.5, True), (0.135 / 0.09, True), (0.66, False), (1.51, False)],
)
def test_value_band_edges(r: float, inside: bool) -> None:
    assert verdicts.within(r) is inside


def test_value_verdicts_and_one_seed() -> None:
    assert verdicts.ratio_verdict(1.2, 1.0) == "1.20x (reproduced)"
    assert verdicts.ratio_verdict(1.6, 1.0) == "1.60x (**not reproduced**)"
    assert verdicts.ratio_verdict(1.2, 1.0, seeds=1) == "1.20x (reproduced, one seed)"
    assert verdicts.ratio_verdict(1.0, 0.0) == "n/a"


def test_fitted_cells_are_never_reproductions() -> None:
    assert verdicts.is_fitted("table5", "bsp_pull_s", "cnn", "fair")
    assert not verdicts.is_fitted("table5", "bsp_pull_s", "lstm", "fair")
    assert verdicts.partly_fitted("table5", "speedup", "resnet20", "fair")
    assert not verdicts.partly_fitted("table5", "speedup", "lstm", "fair")
    assert verdicts.ratio_verdict(1.0, 1.0, fitted=True) == (
        "1.00x (fitted: a calibration input, not a reproduction)"
    )
    assert (
        verdicts.ratio_verdict(1.2, 1.0, partly=True) == "1.20x (within band, from fitted inputs)"
    )


@pytest.mark.parametrize(
    ("ours", "low", "high", "words"),
    [
        (0.12, 0.18, 0.25, "reproduced"),  # exactly 2/3 of the smaller end
        (0.375, 0.18, 0.25, "reproduced"),  # exactly 3/2 of the larger end
        (0.119, 0.18, 0.25, "same direction"),
        (0.376, 0.18, 0.25, "same direction"),
        (-0.1, 0.18, 0.25, "**not reproduced**"),
        (-0.2, -0.25, -0.18, "reproduced"),  # a range of negative reductions, mirrored
        (0.2, -0.1, 0.1, "n/a"),  # a range with no single sign
    ],
)
def test_reduction_range_edges(ours: float, low: float, high: float, words: str) -> None:
    assert verdicts.reduction_range_label(ours, low, high) == words


def test_reduction_of_a_speedup() -> None:
    # A 2x speed-up halves the time; a 0.8x "speed-up" is a 25% longer time.
    assert verdicts.reduction_of_speedup(2.0) == pytest.approx(0.5)
    assert verdicts.reduction_of_speedup(0.8) == pytest.approx(-0.25)
    assert verdicts.reduction_of_speedup(0.0) is None
    assert verdicts.reduction_of_speedup(None) is None

"""Fig. 15's section judges each scheme's accuracy against BSP's and the paper's ASP claim."""

from __future__ import annotations

from experiments.flr2sp.report.fig15 import asp_verdict, sec_fig15


def _row(scheme: str, acc: float, n: int = 3) -> dict:
    return {"model": "cnn", "scheme": scheme, "final_accuracy_mean": acc, "n": n}


def test_each_scheme_is_compared_with_bsp_of_the_same_filter_setting() -> None:
    rows = [_row("bsp-nofilter", 0.47), _row("asp", 0.44), _row("fedbuff", 0.30, n=1),
            _row("bsp", 0.36), _row("fl-r2sp", 0.35)]  # fmt: skip
    lines = sec_fig15({"table": rows})
    body = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines if ln.startswith("| cnn")]
    cells = {c[1]: c[-1] for c in body[: len(rows)]}
    assert cells["fl-r2sp"] == "-0.010 (comparable)"  # against bsp (filter on)
    assert cells["asp"] == "-0.030 (**not comparable**)"  # against bsp-nofilter
    assert cells["fedbuff"] == "-0.170 (**not comparable**, one seed)"  # the fewer seeds
    assert cells["bsp"] == cells["bsp-nofilter"] == ""  # the baselines themselves


def test_asps_severe_degradation_needs_more_than_the_tolerance_below_bsp() -> None:
    assert asp_verdict([_row("bsp-nofilter", 0.47), _row("asp", 0.44)]).startswith("reproduced")
    near = asp_verdict([_row("bsp-nofilter", 0.47), _row("asp", 0.46)])
    assert near.startswith("**not reproduced**") and "-0.010 (comparable" in near
    above = asp_verdict([_row("bsp-nofilter", 0.40), _row("asp", 0.46)])
    assert above.startswith("**not reproduced**")  # better than BSP is no degradation
    assert asp_verdict([_row("bsp-nofilter", 0.47)]) == "n/a"

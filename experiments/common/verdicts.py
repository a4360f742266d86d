"""The rules that turn ours-vs-paper numbers into verdicts, and the cells that were fitted.

Two rules, both stated in the report:

* a **time, ratio or count** is *within the band* when ours / paper lies in
  :data:`BAND`;
* a **reduction** r (Table V's speedup, Table IV's per-round and convergence
  improvement) is judged by its *remaining share* 1 − r: (1 − ours) / (1 − paper)
  must lie in :data:`BAND`. A 91.5% cut against the paper's 76.5% leaves 0.36x
  the paper's remainder, which is not a reproduction, although the two
  percentages look close.

Some paper numbers were *inputs* of the emulation profile
(``fl_r2sp/emulation/profiles.py``, ``docs/paper-notes.md`` §4): they are
listed in :data:`FITTED` and are never called reproductions; a figure derived
from a fitted cell (:data:`DERIVED`) says so.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Ours / paper (or remaining-share ratio) within this band counts as reproduced.
BAND = (2 / 3, 3 / 2)

_ALL = frozenset((m, d) for m in ("cnn", "lstm", "resnet20") for d in ("fair", "fcfs"))

#: (item, metric) -> (model, discipline) cells whose paper value was a calibration input.
FITTED: Mapping[tuple[str, str], frozenset[tuple[str, str]]] = {
    # Client link 16.8 MB/s from Table II's uncontended ResNet20 push + pull.
    ("table2", "alone_s"): frozenset({("resnet20", "fair"), ("resnet20", "fcfs")}),
    # Fair server link 8.3 MB/s from the CNN and ResNet20 pulls of both schemes;
    # the FCFS sender's 4.4 MB/s from the BSP CNN pull.
    ("table5", "bsp_pull_s"): frozenset({("cnn", "fair"), ("resnet20", "fair"), ("cnn", "fcfs")}),
    ("table5", "flr2sp_pull_s"): frozenset({("cnn", "fair"), ("resnet20", "fair")}),
    # Seconds per local iteration from Table IV's BSP round minus Table V's pull and push.
    ("table4", "bsp_round_s"): _ALL,
}

#: (item, metric) -> the metrics it is computed from.
DERIVED: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("table2", "slowdown"): ("alone_s",),
    ("table5", "speedup"): ("bsp_pull_s", "flr2sp_pull_s"),
    ("table5", "pull_ratio"): ("bsp_pull_s", "flr2sp_pull_s"),
    ("table4", "round_reduction"): ("bsp_round_s",),
}


def fitted_text() -> tuple[str, ...]:
    """Human names of the fitted cells and what each fixed (values from the profiles)."""
    from fl_r2sp.emulation.profiles import PAPER_CLIENT_LINK, PAPER_SERVER_FAIR, PAPER_SERVER_FCFS

    return (
        f"Table II: the uncontended ResNet20 push + pull (client links of "
        f"{PAPER_CLIENT_LINK / 1e6:g} MB/s)",
        f"Table V: the BSP and FL-R²SP pulls of the CNN and ResNet20 (fair server link of "
        f"{PAPER_SERVER_FAIR / 1e6:g} MB/s) and the BSP CNN pull (first-come-first-served sender "
        f"of {PAPER_SERVER_FCFS / 1e6:g} MB/s)",
        "Table IV: the BSP per-round time of each model (seconds per local iteration, after "
        "subtracting Table V's pull and push and the delay quantile)",
    )


def is_fitted(item: str, metric: str, model: str, discipline: str) -> bool:
    """True iff the paper's value of this cell was an input of the profile."""
    return (model, discipline) in FITTED.get((item, metric), frozenset())


def partly_fitted(item: str, metric: str, model: str, discipline: str) -> bool:
    """True iff this cell is computed from a fitted cell of the same model and discipline."""
    return any(is_fitted(item, m, model, discipline) for m in DERIVED.get((item, metric), ()))


def within(r: float) -> bool:
    """``r`` lies in :data:`BAND`."""
    return BAND[0] <= r <= BAND[1]


def label(r: float, fitted: bool = False, partly: bool = False) -> str:
    """Verdict word for ratio ``r`` of a cell with the given fit status."""
    if fitted:
        return "fitted: a calibration input, not a reproduction"
    if not within(r):
        return "**not reproduced**"
    return "within band, from fitted inputs" if partly else "reproduced"


def ratio_verdict(
    ours: float | None, paper: float | None, fitted: bool = False, partly: bool = False
) -> str:
    """``ours / paper`` and its verdict (``n/a`` when either is missing or paper is 0)."""
    if ours is None or not paper:
        return "n/a"
    r = ours / paper
    return f"{r:.2f}x ({label(r, fitted, partly)})"


def remaining_ratio(ours: float | None, paper: float | None) -> float | None:
    """(1 − ours) / (1 − paper) of two reductions (None if missing or paper is 1)."""
    if ours is None or paper is None or paper == 1:
        return None
    return (1 - ours) / (1 - paper)


def remaining_verdict(ours: float | None, paper: float | None, partly: bool = False) -> str:
    """Remaining-share ratio of two reductions and its verdict."""
    r = remaining_ratio(ours, paper)
    if r is None:
        return "n/a"
    return f"remaining {r:.2f}x ({label(r, False, partly)})"

"""The rules that turn ours-vs-paper numbers into verdicts, and the cells that were fitted.

Three rules, all stated in the report and used by every section (FL and cluster):

* a **time, ratio or count** is *reproduced* when ours / paper lies in :data:`BAND`;
* a **reduction** r (a speed-up, Table IV's per-round and convergence improvement, a time
  normalised by a baseline read as 1 − time) is *reproduced* only when it has the paper's sign
  and ours / paper's lies in :data:`BAND`; the same sign outside the band is *same direction*;
  the other sign (or no reduction at all) is *not reproduced*, so a FL-R²SP that converges 16%
  slower than BSP never counts as reproducing a 22.4% cut;
* **comparable accuracy** means within :data:`ACCURACY_TOL` (absolute).

A verdict resting on one seed says so (:func:`seed_note`).

Some paper numbers were *inputs* of the emulation profile
(``fl_r2sp/emulation/profiles.py``, ``docs/paper-notes.md`` §4): they are
listed in :data:`FITTED` and are never called reproductions; a figure derived
from a fitted cell (:data:`DERIVED`) says so.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Ours / paper (of a value, or of a reduction with the paper's sign) within this band counts
#: as reproduced.
BAND = (2 / 3, 3 / 2)
#: Two accuracies are comparable when they differ by at most this much (absolute).
ACCURACY_TOL = 0.02
#: Relative slack of the band's and the tolerance's edges: an edge computed in floating point
#: (0.135 / 0.09 = 1.5000000000000002, 0.80 − 0.78 = 0.020000000000000018) still counts as on it.
_EDGE = 1e-9

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
    """``r`` lies in :data:`BAND` (edges included)."""
    return BAND[0] * (1 - _EDGE) <= r <= BAND[1] * (1 + _EDGE)


def seed_note(seeds: int | None) -> str:
    """``", one seed"`` when a verdict rests on a single seed, else empty (None: not stated)."""
    return ", one seed" if seeds == 1 else ""


def plain(words: str) -> str:
    """Verdict words without their Markdown emphasis (for a CSV cell or a table column)."""
    return words.replace("**", "")


def label(r: float, fitted: bool = False, partly: bool = False, seeds: int | None = None) -> str:
    """Verdict words for ratio ``r`` of a value (time, ratio, count) with the given fit status."""
    if fitted:
        return "fitted: a calibration input, not a reproduction"
    if not within(r):
        return f"**not reproduced**{seed_note(seeds)}"
    return ("within band, from fitted inputs" if partly else "reproduced") + seed_note(seeds)


def ratio_verdict(
    ours: float | None,
    paper: float | None,
    fitted: bool = False,
    partly: bool = False,
    seeds: int | None = None,
) -> str:
    """``ours / paper`` of a value and its verdict (``n/a`` when either is missing or paper
    is 0)."""
    if ours is None or not paper:
        return "n/a"
    r = ours / paper
    return f"{r:.2f}x ({label(r, fitted, partly, seeds)})"


def reduction_label(
    ours: float | None, paper: float | None, partly: bool = False, seeds: int | None = None
) -> str:
    """Verdict words for reduction ``ours`` against the paper's: *reproduced* (the paper's
    sign, ours / paper's in :data:`BAND`), *same direction* (the sign, outside the band) or
    *not reproduced* (the other sign, or none); ``n/a`` when either is missing or the paper's
    is zero (a zero reduction has no sign to share)."""
    if paper is None:
        return "n/a"
    return reduction_range_label(ours, paper, paper, partly, seeds)


def reduction_range_label(
    ours: float | None,
    low: float,
    high: float,
    partly: bool = False,
    seeds: int | None = None,
) -> str:
    """:func:`reduction_label` against a paper range of reductions ("up to 19–25%"): with the
    range's sign, *reproduced* when ours lies in [2/3 of its smaller end, 3/2 of its larger]
    (of the magnitudes); ``n/a`` when ours is missing or the range has no single sign."""
    if ours is None or low * high <= 0:
        return "n/a"
    note = seed_note(seeds)
    small, large = sorted((abs(low), abs(high)))
    mine = ours if low > 0 else -ours
    if mine <= 0:
        return f"**not reproduced**{note}"
    if not BAND[0] * small * (1 - _EDGE) <= mine <= BAND[1] * large * (1 + _EDGE):
        return f"same direction{note}"
    return ("within band, from fitted inputs" if partly else "reproduced") + note


def reduction_verdict(
    ours: float | None, paper: float | None, partly: bool = False, seeds: int | None = None
) -> str:
    """``ours / paper's`` reduction and its verdict words (:func:`reduction_label`)."""
    words = reduction_label(ours, paper, partly, seeds)
    if words == "n/a" or ours is None or not paper:
        return words
    return f"{ours / paper:.2f}x ({words})"


def reduction_of_norm(norm: float | None) -> float | None:
    """The reduction a time normalised by its baseline stands for: 1 − ``norm`` (None kept)."""
    return None if norm is None else 1 - norm


def reduction_of_speedup(speedup: float | None) -> float | None:
    """The time reduction an x-fold speed-up (baseline's time / ours) stands for: 1 − 1/x
    (None when missing or not positive)."""
    return None if speedup is None or speedup <= 0 else 1 - 1 / speedup


def comparable(a: float | None, b: float | None) -> bool | None:
    """Whether accuracies ``a`` and ``b`` are within :data:`ACCURACY_TOL` (None if missing)."""
    if a is None or b is None:
        return None
    return abs(a - b) <= ACCURACY_TOL * (1 + _EDGE)


def accuracy_verdict(ours: float | None, other: float | None, seeds: int | None = None) -> str:
    """``ours − other`` (accuracy) and whether they are comparable (``n/a`` if missing)."""
    same = comparable(ours, other)
    if same is None or ours is None or other is None:
        return "n/a"
    words = "comparable" if same else "**not comparable**"
    return f"{ours - other:+.3f} ({words}{seed_note(seeds)})"

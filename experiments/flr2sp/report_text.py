"""Prose of REPORT.md: how the numbers were made, and each item's reading of its numbers.

Every figure in this prose is computed from the item summaries, the scale
settings (:mod:`experiments.common.conf`), the profiles or the paper's numbers
(:mod:`experiments.flr2sp.paper`); none is typed here (a test checks that no string
literal of this module holds a digit). Verdicts follow the stated rules of
:mod:`experiments.common.verdicts`. The training items' prose is in
:mod:`experiments.flr2sp.report_text_training`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from experiments.common import verdicts
from experiments.common.conf import TIMING, TRAINING
from experiments.flr2sp import paper

Summary = dict[str, Any]


def mean(row: dict | None, key: str) -> float | None:
    """``<key>_mean`` of an aggregated row (None when missing)."""
    value = None if row is None else row.get(f"{key}_mean")
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def num(x: float | None, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals, or ``n/a``."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def pct(x: float | None) -> str:
    """``x`` as a percentage with one decimal, or ``n/a``."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def one(rows: Iterable[dict], **keys: Any) -> dict | None:
    """The first row whose columns equal ``keys``."""
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def span(values: Iterable[float | None], digits: int = 2, unit: str = "x") -> str:
    """``lo–hi`` (or one value) of the known values, with ``unit``."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return "n/a"
    lo, hi = f"{xs[0]:.{digits}f}", f"{xs[-1]:.{digits}f}"
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` (None when either is missing or ``b`` is zero)."""
    return None if a is None or not b else a / b


def _settings_line(name: str, s: dict[str, Any]) -> str:
    need = math.ceil(s["fraction"] * s["group_size"])
    return (
        f"{s['num_partitions']} clients in groups of {s['group_size']} (C = {s['fraction']}: "
        f"{need} of {s['group_size']}), tau = {s['local_iterations']}, "
        f"{s['rounds']} BSP-round equivalents per run ({name})"
    )


def scale_text(code: str, reuse: str) -> list[str]:
    """The "how these numbers were made" section, from the scale settings and profiles."""
    from experiments.flr2sp.outliers_scoring import SETTING as scoring
    from fl_r2sp.emulation.profiles import (
        PAPER_CLIENT_LINK,
        PAPER_SERVER_FAIR,
        PAPER_SERVER_FCFS,
        PROFILES,
    )

    lap, tr, pap = TIMING["laptop"], TRAINING["laptop"], TRAINING["paper"]
    cnn = PROFILES["paper-ec2"].seconds_per_iteration
    pool = "all" if not tr["max_train_samples"] else f"{tr['max_train_samples']:,}"
    return [
        "## How these numbers were made",
        "",
        f"- Engine code version `{code}` (hash of `fl_r2sp/` without `cluster/`, "
        "`experiments/common/provenance.py`); each section says which code version computed its runs. "
        f"Reuse of older code's runs: `{reuse}` (`FL_R2SP_REUSE_RUNS`).",
        "- Engine: `fl_r2sp.server.runner.run` in-process over the virtual clock "
        "(deterministic); times are *virtual* seconds of the emulated deployment.",
        f"- Network: `paper-ec2` = fair-shared server link of {PAPER_SERVER_FAIR / 1e6:g} MB/s "
        f"each way, client links {PAPER_CLIENT_LINK / 1e6:g} MB/s; `paper-ec2-fcfs` = a server "
        f"that sends and receives one model at a time at {PAPER_SERVER_FCFS / 1e6:g} MB/s. "
        "Seconds per local iteration: "
        + ", ".join(f"{m} {cnn[m]:g} s" for m in paper.MODELS)
        + ".",
        "- Timing items (no SGD, clients echo the model) at the paper's size: "
        + _settings_line("`--scale laptop`", {**lap, "group_size": lap["group_size"]})
        + ", log-normal delays.",
        "- Training items at `--scale laptop`: "
        + _settings_line("at most", tr)
        + f", train pool {pool} samples, batch "
        f"{tr['batch_size']}, lr {tr['lr']} (paper {pap['lr']}), outliers: "
        f"{pct(tr['outlier_fraction'])} of clients with Dirichlet {tr['outlier_alpha']}, the "
        f"others {tr['alpha']}; models trained: {', '.join(tr['models'])} (the others are not "
        "trained at this scale). Stagnation: no gain above "
        f"{tr['convergence_tol']} for {tr['convergence_window']} evaluations.",
        "- Training items at the paper's size (`paper_scale`, `outliers_scoring`; computed "
        "where a GPU or enough CPU time was available, from the run cache): "
        + _settings_line("at most", pap)
        + f" (the scoring runs: {scoring['rounds']} BSP-round equivalents, filter off)"
        + f", the full train split, batch {pap['batch_size']}, lr {pap['lr']}; stagnation: no "
        f"gain above {pap['convergence_tol']} for {pap['convergence_window']} evaluations. Each "
        "of their sections says how and where its runs were computed.",
        "",
        *verdict_rules(),
        "",
    ]


def verdict_rules() -> list[str]:
    """The verdict rules and the fitted cells, from :mod:`experiments.common.verdicts`."""
    lo, hi = verdicts.BAND
    return [
        "**Verdict rules.** A time, ratio or count is *reproduced* when ours / paper lies in "
        f"[{lo:.2f}, {hi:.2f}]. A reduction (a speedup or an improvement) is judged by what "
        "it leaves: our remaining share (one minus the reduction) over the paper's must lie in "
        "the same band.",
        "",
        "**Fitted, never reproductions.** These paper numbers were inputs of the emulation "
        f"profile (`{paper.CALIBRATION_NOTES}`); their cells say *fitted*, and figures derived "
        "from them say *from fitted inputs*:",
        *(f"- {t}" for t in verdicts.fitted_text()),
    ]


def _row_ratios(rows: list[dict], key: str, ref: dict, disc: str) -> list[float | None]:
    return [
        ratio(mean(r, key), ref.get(r["model"], {}).get(key))
        for r in rows
        if r["discipline"] == disc
    ]


def note_table2(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    parts = []
    for disc in ("fair", "fcfs"):
        cont = _row_ratios(rows, "contended_s", paper.TABLE2, disc)
        slow = [
            (r["model"], ratio(mean(r, "slowdown"), paper.TABLE2[r["model"]]["slowdown"]))
            for r in rows
            if r["discipline"] == disc
        ]
        ok = [m for m, x in slow if x is not None and verdicts.within(x)]
        parts.append(
            f"{disc}: contended communication {span(cont)} the paper's; slowdown "
            f"within the band for {', '.join(ok) or 'no model'}"
        )
    cnn = {
        disc: mean(one(rows, model="cnn", discipline=disc), "alone_s") for disc in ("fair", "fcfs")
    }
    t5, setup = paper.TABLE5["cnn"], paper.TABLE2_SETUP
    return (
        "**Reading.** " + "; ".join(parts) + ". A lone client is capped by the server link "
        f"fitted to Table V: its CNN push + pull takes {num(cnn['fair'], 3)} s (fair) and "
        f"{num(cnn['fcfs'], 3)} s (FCFS) against the paper's {paper.TABLE2['cnn']['alone_s']} s. "
        "Where a slowdown lands in the band while its two parts do not, the parts are off by "
        f"similar factors, not reproduced. The paper's Table II ({setup['window_s']} s windows, "
        f"a report every {setup['report_every_iterations']} iterations) is not consistent with "
        "its Table V: BSP CNN communication of "
        f"{paper.TABLE2['cnn']['contended_s']} s there against "
        f"{t5['bsp_push_s'] + t5['bsp_pull_s']:.2f} s (push + pull) in Table V; we calibrate "
        "to Table V, so Table II is a secondary check."
    )


def note_table5(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    push = {disc: _row_ratios(rows, "bsp_push_s", paper.TABLE5, disc) for disc in ("fair", "fcfs")}
    flpush = {
        disc: _row_ratios(rows, "flr2sp_push_s", paper.TABLE5, disc) for disc in ("fair", "fcfs")
    }
    rem = [
        (
            r["model"],
            r["discipline"],
            verdicts.remaining_ratio(mean(r, "speedup"), paper.TABLE5[r["model"]]["speedup"]),
        )
        for r in rows
    ]
    ok = [f"{m} ({disc})" for m, disc, x in rem if x is not None and verdicts.within(x)]
    return (
        "**Reading.** The pulls of the CNN and ResNet20 were fitted (above). BSP's push is "
        f"{span(push['fair'])} the paper's under fair sharing and {span(push['fcfs'])} under "
        "FCFS: fair sharing ends every BSP pull at the same instant, so the clients finish "
        "training together and their pushes collide, while a first-come-first-served sender "
        "releases them one after another. FL-R²SP's push is "
        f"{span(flpush['fair'])} (fair) and {span(flpush['fcfs'])} (FCFS) the paper's; the "
        "calibrated profiles have no per-transfer cost (the group-size sweep tries one). The "
        "communication "
        f"reduction leaves {span(x for *_, x in rem)} the paper's remaining share; within the "
        f"band: {', '.join(ok) or 'none'}."
    )


def note_fig16(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    parts = []
    for disc in ("fair", "fcfs"):
        b, f = (
            one(rows, strategy="bsp", discipline=disc),
            one(rows, strategy="fl-r2sp", discipline=disc),
        )
        shorter = ratio(mean(b, "avg_pull_s"), mean(f, "avg_pull_s"))
        parts.append(
            f"{disc}: FL-R²SP's pull is {num(shorter, 1)}x shorter than BSP's, its global "
            "updates gapped with a cv of "
            f"{num(mean(f, 'cv_update_gap'), 3)}"
        )
    return (
        "**Reading.** " + "; ".join(parts) + ". The window is a few client cycles around "
        "the middle of the run (`experiments/flr2sp/fig16.py`), not the paper's rounds. BSP's cv is "
        "near zero only because it has one group, whose updates are one round apart."
    )


def note_fig17(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    cells = []
    for r in rows:
        ks = [k for k in r if k.startswith("peak_ratio_") and k.endswith("_mean")]
        cells.append(
            f"{r['model']} ({r['discipline']}): "
            + ", ".join(
                f"{k[len('peak_ratio_') : -len('_mean')]} {num(r[k])}" for k in sorted(ks, key=_bin)
            )
        )
    ref = paper.FIG17_PEAK_RATIO
    return (
        "**Reading.** Peak ratio BSP / FL-R²SP by bin width: " + "; ".join(cells) + ". In a "
        "fluid model every burst of pulls saturates the server link, so at the finest bins both "
        "schemes peak at the link capacity; coarser bins show BSP's synchronised burst filling "
        "whole bins. The paper's "
        + ", ".join(f"{v}x ({m})" for m, v in ref.items())
        + " is a nethogs figure; the ratio depends on bin width, model size and discipline, "
        "and is not a calibrated quantity. The plots leave out the start-up burst the table "
        "leaves out."
    )


def _bin(key: str) -> float:
    return float(key[len("peak_ratio_") :].split("s_")[0])


def note_fig18(d: Summary, _: dict[str, Summary]) -> str:
    best = d.get("best_by_variant") or {"baseline": d.get("best_group_size", {})}
    variants = d.get("variants", {})
    base = best.get("baseline", {})
    lines = []
    for variant, per_model in best.items():
        moved = [
            m
            for m, b in per_model.items()
            if b["avg_cycle_s"] != base.get(m, {}).get("avg_cycle_s")
        ]
        knobs = (
            ", ".join(f"{k} = `{v}`" for k, v in variants.get(variant, {}).items())
            or "as calibrated"
        )
        lines.append(
            f"- {variant} ({knobs}): best client cycle at "
            + ", ".join(f"{m} {b['avg_cycle_s']}" for m, b in sorted(per_model.items()))
            + (
                f"; moved from the baseline for {', '.join(moved)}"
                if moved and variant != "baseline"
                else ""
            )
        )
    return (
        "**Reading.** Best group size (client cycle, paper: "
        f"{paper.FIG18_BEST_GROUP}) per assumption about small-group costs:\n\n"
        + "\n".join(lines)
        + "\n\nThe variants' values are assumptions, not measurements of "
        "the paper's testbed; the question is which of them moves the optimum toward the "
        "paper's."
    )


def note_c_sweep(d: Summary, _: dict[str, Summary]) -> str:
    rows = d["table"]
    parts = []
    for strategy in ("bsp", "fl-r2sp"):
        cyc = {r["fraction"]: mean(r, "avg_cycle_s") for r in rows if r["strategy"] == strategy}
        parts.append(
            f"{strategy}: client cycle "
            + ", ".join(f"{num(v)} s at C = {c}" for c, v in sorted(cyc.items()))
        )
    acc = d.get("accuracy", [])
    accs = ", ".join(
        f"{num(mean(r, 'final_accuracy'), 3)} at C = {r['fraction']}"
        for r in sorted(acc, key=lambda r: r["fraction"])
    )
    return (
        "**Reading.** No paper numbers (the study is in the paper's unavailable appendix). "
        + "; ".join(parts)
        + "."
        + (f" FL-R²SP final accuracy: {accs}." if accs else "")
    )


def _training_notes() -> dict[str, Callable[[Summary, dict[str, Summary]], str]]:
    from experiments.flr2sp import report_text_training as t
    from experiments.flr2sp.report_text_paper import note_paper_scale

    return {
        "table4": t.note_table4,
        "fig15": t.note_fig15,
        "outliers": t.note_outliers,
        "outliers_scoring": t.note_outliers_scoring,
        "paper_scale": note_paper_scale,
    }


def notes() -> dict[str, Callable[[Summary, dict[str, Summary]], str]]:
    """Item -> function of (its summary, all summaries) returning its reading."""
    return {
        "table2": note_table2,
        "table5": note_table5,
        "fig16": note_fig16,
        "fig17": note_fig17,
        "fig18": note_fig18,
        "c_sweep": note_c_sweep,
        **_training_notes(),
    }

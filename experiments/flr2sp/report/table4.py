"""The section of REPORT.md on Table IV (per-round and convergence time).

Its table is :func:`sec_table4`, its reading :func:`note_table4`. Every figure of the reading is
computed from the summaries, the settings or the paper's numbers; no string literal here holds a
digit (a test checks it).
"""

from __future__ import annotations

from experiments.common import verdicts
from experiments.common.conf import TRAINING
from experiments.flr2sp import paper
from experiments.flr2sp.report.formats import (
    Summary,
    mean,
    ms,
    num,
    pct,
    ratio,
    rem,
    span,
    table,
    vs,
)


def note_table4(d: Summary, _: dict[str, Summary]) -> str:
    rt = d.get("round_time", [])
    fl = [ratio(mean(r, "flr2sp_round_s"), paper.TABLE4[r["model"]]["flr2sp_round_s"]) for r in rt]
    bsp = [ratio(mean(r, "bsp_round_s"), paper.TABLE4[r["model"]]["bsp_round_s"]) for r in rt]
    rem = []
    for r in rt:
        p = paper.TABLE4[r["model"]]
        rem.append(ratio(mean(r, "round_reduction"), 1 - p["flr2sp_round_s"] / p["bsp_round_s"]))
    text = (
        f"**Per-round time.** FL-R²SP's group round is {span(fl)} the paper's. BSP's round is "
        f"{span(bsp)} the paper's; it is a fitted input (the seconds per iteration were derived "
        "from it with the paper's pull and push), so its deviation is our pull + push minus the "
        f"paper's. The per-round reduction is {span(rem)} the paper's."
    )
    conv = []
    for r in d.get("table", []):
        tta = mean(r, "tta_improvement")
        done = [round((mean(r, k) or 0.0) * r["n"]) for k in ("bsp_converged", "flr2sp_converged")]
        who = ("BSP" if tta is not None and tta < 0 else "FL-R²SP") if tta is not None else None
        p = paper.TABLE4.get(r["model"], {})
        cut = None if not p else 1 - p["flr2sp_conv_s"] / p["bsp_conv_s"]
        both = min(done)
        conv.append(
            f"filter {r.get('filter', 'on')}: converged BSP {done[0]}, "
            f"FL-R²SP {done[1]} of {r['n']} seeds; convergence time cut "
            f"{pct(mean(r, 'improvement'))} against the paper's {pct(cut)} ("
            + verdicts.reduction_verdict(mean(r, "improvement"), cut, seeds=both or None)
            + ", over the seeds where both converged); final accuracy "
            f"{num(mean(r, 'bsp_acc'), 3)} vs {num(mean(r, 'flr2sp_acc'), 3)}; "
            + (
                f"{who} reaches the common accuracy target first ({pct(tta)} time-to-accuracy "
                "change)"
                if who
                else "no common accuracy target reached"
            )
            + why_conv(r, p)
        )
    tr = TRAINING[d.get("scale", "laptop")]
    if conv:
        text += (
            f" **Convergence at `{d.get('scale')}` scale** (at most "
            f"{tr['rounds']} rounds; not comparable with the paper's seconds): "
            + "; ".join(conv)
            + "."
        )
    return text


def why_conv(r: Summary, p: dict) -> str:
    """Why the convergence cut differs from the paper's, split into its two factors.

    Convergence time = rounds to stagnate x seconds per round (``rounds_to`` in
    ``experiments/flr2sp/table4.py``). The paper's two schemes imply the same round count, so
    its cut is its per-round cut; ours is read the same way, from the means of the record.
    Empty when a factor is missing.
    """
    per_round = ratio(mean(r, "flr2sp_round_s"), mean(r, "bsp_round_s"))
    rounds = ratio(mean(r, "flr2sp_rounds"), mean(r, "bsp_rounds"))
    if per_round is None or rounds is None or not p:
        return ""
    paper_rounds = ratio(
        p["flr2sp_conv_s"] / p["flr2sp_round_s"], p["bsp_conv_s"] / p["bsp_round_s"]
    )
    return (
        f". Why: convergence time is rounds x seconds per round; FL-R²SP's rounds take "
        f"{num(per_round)}x BSP's but it needs {num(rounds)}x as many rounds to stagnate "
        f"({num(mean(r, 'flr2sp_rounds'), 1)} vs {num(mean(r, 'bsp_rounds'), 1)}), where the "
        f"paper's times imply {num(paper_rounds)}x. The rounds are what differ; the schemes differ "
        "in that each FL-R²SP update averages one group's clients on a model the other groups "
        "have moved since, where BSP averages every group on the current model"
    )


def sec_table4(d: dict) -> list[str]:
    out = ["Per-round time at the paper's size (timing-only; the Table V runs):", ""]
    rows = []
    for r in d.get("round_time", []):
        p = paper.TABLE4.get(r["model"], {})
        red = 1 - p["flr2sp_round_s"] / p["bsp_round_s"] if p else None
        rows.append(
            [
                r["model"],
                r["discipline"],
                f"{ms(r, 'bsp_round_s')} ({p.get('bsp_round_s')}; "
                f"{vs(r, 'bsp_round_s', p.get('bsp_round_s'), 'table4')})",
                f"{ms(r, 'flr2sp_round_s')} ({p.get('flr2sp_round_s')}; "
                f"{vs(r, 'flr2sp_round_s', p.get('flr2sp_round_s'), 'table4')})",
                ms(r, "flr2sp_cycle_s"),
                ms(r, "round_reduction", pct=True),
                "n/a" if red is None else f"{100 * red:.1f}%",
                rem(r, "round_reduction", red, "table4"),
            ]
        )
    out += table(
        [
            "model",
            "server",
            "BSP round s (paper; ratio)",
            "FL-R²SP group round s (paper; ratio)",
            "FL-R²SP client cycle s",
            "reduction",
            "paper",
            "verdict",
        ],
        rows,
    )
    out += [
        "",
        "Convergence with real training at the run's scale (virtual seconds; conv = start "
        "of the stagnant window; tta = time to reach a fraction of the lower best accuracy, "
        "`experiments/flr2sp/table4.py` TTA_FRACTION):",
        "",
    ]
    rows = []
    for r in d["table"]:
        p = paper.TABLE4.get(r["model"], {})
        conv = "/".join(
            f"{round((r.get(k) or 0) * r['n'])}"
            for k in ("bsp_converged_mean", "flr2sp_converged_mean")
        )
        rows.append(
            [
                r["model"],
                r.get("filter", "on"),
                f"{r['n']} ({conv})",
                ms(r, "bsp_conv_s", 0),
                ms(r, "flr2sp_conv_s", 0),
                ms(r, "improvement", pct=True),
                f"{100 * p['improvement']:.1f}%" if "improvement" in p else "n/a",
                rem(r, "improvement", p.get("improvement"), "table4"),
                ms(r, "bsp_tta_s", 0),
                ms(r, "flr2sp_tta_s", 0),
                ms(r, "tta_improvement", pct=True),
                ms(r, "bsp_acc", 3),
                ms(r, "flr2sp_acc", 3),
            ]
        )
    out += table(
        [
            "model",
            "filter",
            "seeds (converged BSP/FL)",
            "BSP conv (s)",
            "FL-R²SP conv (s)",
            "improvement",
            "paper",
            "verdict",
            "BSP tta (s)",
            "FL-R²SP tta (s)",
            "tta improvement",
            "BSP final acc",
            "FL-R²SP final acc",
        ],
        rows,
    )
    return out

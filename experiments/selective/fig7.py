"""Fig. 7 of the selective-reduce paper: the wasted wait time of BPAWR against cluster size.

Setup, our choices and the verdict rules: :mod:`experiments.selective.trials`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.selective import cli
from experiments.selective.fig5_6 import size_rows
from experiments.selective.trials import (
    PAPER_WASTED_PCT,
    TRACES,
    TRIALS,
    bound_claim,
    panels,
    write_item,
)


def fig7(out: Path, count: int = TRIALS) -> dict[str, Any]:
    """Fig. 7: BPAWR's wasted wait per worker vs n (selective reduce; the others never wait)."""
    rows = [r for r in size_rows(out, count) if r["scheme"] == "selective"]
    claims = []
    for trace in TRACES:
        sub = [r for r in rows if r["trace"] == trace]
        for reading, key in (("member (strict)", "wasted_wait"), ("slot (lenient)", "wasted_slot")):
            worst = max(r[f"{key}_pct_max"] for r in sub)
            ms = " / ".join(f"{1e3 * r[f'{key}_s_median']:.3g}" for r in sub)
            claims.append({
                "figure": "Fig. 7", "trace": trace,
                "claim": f"wasted wait < 0.01% of the 100 s, {reading} reading, waits still open "
                "at the cutoff counted as wasted (an upper bound)",
                "paper": f"< {PAPER_WASTED_PCT}% (a few ms per worker)",
                "ours": f"median ms/worker {ms}; worst trial {worst:.3g}%",
                "verdict": bound_claim(worst < PAPER_WASTED_PCT),
            })  # fmt: skip
        claims.append({
            "figure": "Fig. 7", "trace": trace,
            "claim": "wasted wait < 0.01% of the 100 s, waits still open at the cutoff excluded "
            "(the paper's meaning)",
            "paper": f"< {PAPER_WASTED_PCT}% (a few ms per worker)",
            "ours": "not separated by the simulator (the rows above bound it)", "verdict": "n/a",
        })  # fmt: skip
        waited = " / ".join(f"{r['waited_s_median']:.3g}" for r in sub)
        claims.append({
            "figure": "Fig. 7", "trace": trace,
            "claim": "(ours) all BPAWR-induced wait, s per worker",
            "paper": "not reported", "ours": waited, "verdict": "n/a",
        })  # fmt: skip
    d = write_item(out, "fig7", rows, claims)
    for r in rows:
        r["wasted_wait_ms_min"] = 1e3 * r["wasted_wait_s_min"]
        r["wasted_wait_ms_median"] = 1e3 * r["wasted_wait_s_median"]
        r["wasted_wait_ms_max"] = 1e3 * r["wasted_wait_s_max"]
    panels(
        d / "fig7.png",
        rows,
        "n",
        ("wasted_wait_ms", "waited_s"),
        lambda r: r["trace"],
        "workers n",
        "Fig. 7: selective reduce, BPAWR wait per worker (median, min-max)",
    )
    return {"table": claims, "figures": ["fig7.png"]}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.selective.fig7``: this item alone, then write its REPORT.md."""
    cli.main({"fig7": fig7}, "experiments.selective.fig7", __doc__, argv)


if __name__ == "__main__":
    main()

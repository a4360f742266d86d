"""How the FL-R²SP numbers were made: the scale settings, the emulated network, the rules.

Every figure in this prose is computed from the scale settings (:mod:`experiments.common.conf`),
the profiles or the paper's numbers (:mod:`experiments.flr2sp.paper`); none is typed here (a
test checks that no string literal of this module holds a digit). Verdicts follow the stated
rules of :mod:`experiments.common.verdicts`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from experiments.common import verdicts
from experiments.common.conf import TIMING, TRAINING
from experiments.flr2sp import paper
from experiments.flr2sp.report.formats import (
    pct,
)


def _settings_line(name: str, s: Mapping[str, Any]) -> str:
    need = math.ceil(s["fraction"] * s["group_size"])
    return (
        f"{s['num_partitions']} clients in groups of {s['group_size']} (C = {s['fraction']}: "
        f"{need} of {s['group_size']}), tau = {s['local_iterations']}, "
        f"{s['rounds']} BSP-round equivalents per run ({name})"
    )


def scale_text() -> list[str]:
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
        "- Code versions: each FL section says which code version (hash of `fl_r2sp/` without "
        "`cluster/`, `experiments/common/provenance.py`, which a pure move of files does not "
        "change; the versions the layout move renamed are listed in "
        "`experiments/common/same_code.py`) and which commit computed its runs; a run made by "
        "uncommitted edits is never shown.",
        "- Engine: `fl_r2sp.fl.server.runner.run` in-process over the virtual clock "
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
        "**Verdict rules** (every section, FL and cluster; `experiments/common/verdicts.py`). "
        "A time, ratio or count is *reproduced* when ours / paper lies in "
        f"[{lo:.2f}, {hi:.2f}]. A reduction (a speed-up, an improvement, or a time normalised "
        "by its baseline, read as one minus it) is *reproduced* only when it has the paper's "
        "sign and ours / paper's lies in the same band; the same sign outside the band is "
        "*same direction*; the other sign (or none) is *not reproduced*. Accuracies are "
        f"*comparable* when they differ by at most {verdicts.ACCURACY_TOL:g} (absolute). Seed "
        "counts stand beside every figure, and a verdict resting on one seed says so.",
        "",
        "**Fitted, never reproductions.** These paper numbers were inputs of the emulation "
        f"profile (`{paper.CALIBRATION_NOTES}`); their cells say *fitted*, and figures derived "
        "from them say *from fitted inputs*:",
        *(f"- {t}" for t in verdicts.fitted_text()),
    ]

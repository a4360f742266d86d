"""The DS-Sync part of REPORT.md's cluster section, computed (no figure typed here).

Two sources, never mixed:

* the flow-level twin at the paper's size (:mod:`experiments.dssync.twin`), recomputed here
  (it takes well under a second): communication time per iteration, CIFAR-10 model size, the
  "aggregate" uplink model, beside the paper's Tables III-V;
* the real CPU runs published by ``python -m experiments.dssync.real`` in
  ``records/report/dssync_real/results.json`` (their scale is in the file's arguments).

The verdict rule is the twin's (:func:`experiments.dssync.twin.verdict`: the report's rules of
:mod:`experiments.common.verdicts`), applied to DS-Sync's speed-up over each baseline.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.common import verdicts
from experiments.dssync.real import scale_line, table_lines
from experiments.dssync.twin import METHODS as TWIN_METHODS
from experiments.dssync.twin import MODELS, PAPER, twin_times, verdict
from experiments.dssync.twin import scenario as twin_scenario

DATA = "Cifar10"
UPLINK = "aggregate"


def twin_lines() -> list[str]:
    """The twin's CIFAR-10 rows for S1-S3 with the paper's and the verdicts."""
    rn = twin_scenario("S3", UPLINK)
    n = sum(len(r) for r in rn.racks)
    lines = [
        "### DS-Sync on the flow-level twin at the paper's size (communication only)",
        "",
        f"{n} workers in {len(rn.racks)} racks, {rn.nic_gbps:g} Gb/s links, uplink model "
        f"{UPLINK!r}, a model of {MODELS[DATA] / 4e6:.1f} M fp32 parameters (the paper's "
        "WideResNet-28-10 on CIFAR-10); `python -m experiments.dssync.twin` prints every data "
        "set and both uplink models.",
        "",
        "| scenario | method | twin ms | paper ms | DS-Sync speed-up, twin | paper | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for sc in ("S1", "S2", "S3"):
        ours, found = twin_times(twin_scenario(sc, UPLINK), MODELS[DATA])
        paper = PAPER[(sc, DATA)]
        last = len(TWIN_METHODS) - 1
        for k, method in enumerate(TWIN_METHODS):
            cells = [sc, method, f"{ours[k]:.1f}", f"{paper[k]:.1f}"]
            if k == last:
                cells += [found, "", ""]
            else:
                su, sp = ours[k] / ours[last], paper[k] / paper[last]
                cells += [f"{su:.2f}x", f"{sp:.2f}x", verdict(su, sp, True)]
            lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def real_lines(root: Path) -> list[str]:
    """The published real runs (``root / dssync_real / results.json``)."""
    path = root / "dssync_real" / "results.json"
    lines = ["### DS-Sync in the real runtime (CPU, emulated racks)", ""]
    if not path.exists():
        return [*lines, "Not run (no `dssync_real/results.json`).", ""]
    data = json.loads(path.read_text())
    return [
        *lines,
        f"Scale: {scale_line(data['args'])}. Command: `python -m experiments.dssync.real` "
        "(its docstring defines every column; the loss target of a scenario is AR BSP's own "
        "trailing-mean training loss after three quarters of its iterations; the twin column is "
        "the network alone at this scale, so the excess over it is CPU and gloo cost).",
        "",
        *table_lines(data["rows"], data["args"]),
        "",
    ]


def dssync_lines(root: Path) -> list[str]:
    """The whole DS-Sync section; ``root`` is ``experiments/report``."""
    lo, hi = verdicts.BAND
    return [
        "## Cluster mode: DS-Sync against all-reduce, hierarchical all-reduce and gossip",
        "",
        f"Verdict rule, on a ratio of communication times (the twin's table: a baseline's over "
        "DS-Sync's; the real table: all-reduce's over each scheme's), ours against the "
        "paper's, each read as the time it saves (one minus its inverse), a reduction: "
        f"*reproduced* with the paper's sign and ours / paper's in [{lo:.2f}, {hi:.2f}], *same "
        "direction* with the sign outside the band, else *not reproduced*. The paper's rows "
        "are its CIFAR-10 rows.",
        "",
        *twin_lines(),
        *real_lines(root),
    ]

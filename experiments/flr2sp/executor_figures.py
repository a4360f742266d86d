"""The executor figures, parsed from the logs of the GPU checks into one small file.

``scripts/gpu_checks.sh`` writes ``checks.txt`` (stages: environment, the
paper-size CNN round benchmark, the tolerance check, the ResNet20 round) and
a rerun of the tolerance stage may be kept beside it as ``tolerance.txt``.
Their runs are not in any cache, so the report cannot recompute them; this
script *parses* the printed tables of ``benchmarks/bench_executor.py`` (no
figure is typed) into a committed JSON file that the report reads::

    python -m experiments.flr2sp.executor_figures --logs records/results/gpu_logs \\
        --dest records/report/executor_figures.json

Parsed per benchmark: the round (clients, tau, batch, samples, model), the
machine's core count and load before, each row (samples/s, ``x limit`` =
limit rate / row rate, round seconds, start-up seconds, weight differences
against the serial executor, rerun equality) and the peak-memory table.
An unexpected line format raises ``ValueError`` naming the line.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

#: Width of the row label of bench_executor's timing table (``f"{label:<28}"``).
LABEL_WIDTH = 28
#: Timing-table header names -> JSON keys.
COLUMNS = {
    "samples/s": "samples_per_s",
    "x limit": "x_limit",
    "round s": "round_s",
    "start s": "start_s",
    "max|dw|": "max_dw",
    "med|dw|": "med_dw",
    "max rel": "max_rel",
    "rerun": "rerun",
}
_STAGE_OPEN = re.compile(r"^=== (\S+) \(limit (\d+)s, (-?\d+)s of budget left\) ===$")
_STAGE_CLOSE = re.compile(r"^=== (\S+): exit (\d+) after (\d+)s ===$")
_STAGE_SKIPPED = re.compile(r"^=== (\S+): skipped, (-?\d+)s of budget left ===$")
_ROUND = re.compile(
    r"^round: (\d+) clients x tau (\d+) x batch (\d+) = ([\d,]+) samples, model (\S+), "
    r"augment (\S+), best of (\d+) interleaved pass\(es\)$"
)
_LOAD = re.compile(r"^load average before: ([\d.]+), cores: (\d+)")
#: Lines that end the timing table when no blank line does.
_AFTER_TABLE = ("load average", "peak resident memory", "===")


def stages(text: str, default: str = "log") -> list[dict[str, Any]]:
    """Split a log into its ``=== name ... ===`` stages (a log without markers is one stage
    named ``default``): name, time limit, exit code, seconds after start, body lines. A stage
    the budget left no room for is one with ``skipped`` true and no limit or exit."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if m := _STAGE_OPEN.match(line):
            current = dict(name=m[1], limit_s=int(m[2]), exit=None, after_s=None, lines=[])
            out.append(current)
        elif m := _STAGE_SKIPPED.match(line):
            out.append(dict(name=m[1], limit_s=None, exit=None, after_s=None, lines=[]))
            out[-1]["skipped"] = True
            current = None
        elif (m := _STAGE_CLOSE.match(line)) and current is not None and m[1] == current["name"]:
            current.update(exit=int(m[2]), after_s=int(m[3]))
            current = None
        else:
            if current is None:
                if not out or out[-1]["name"] != default:
                    out.append(dict(name=default, limit_s=None, exit=None, after_s=None, lines=[]))
                current_lines = out[-1]["lines"]
            else:
                current_lines = current["lines"]
            current_lines.append(line)
    return out


def timing_row(line: str, ends: dict[int, str]) -> dict[str, Any]:
    """One row of the timing table: its label and each value under the header column whose
    right edge it ends at (the table is right-aligned)."""
    row: dict[str, Any] = {"label": line[:LABEL_WIDTH].strip()}
    for m in re.finditer(r"\S+", line[LABEL_WIDTH:]):
        key = ends.get(m.end())
        if key is None:
            raise ValueError(f"value {m[0]!r} under no column in line {line!r}")
        row[key] = m[0] if key == "rerun" else float(m[0])
    return row


def bench(lines: list[str]) -> dict[str, Any] | None:
    """The benchmark printed in ``lines`` (None when there is none)."""
    found = next((m for line in lines if (m := _ROUND.match(line))), None)
    if found is None:
        return None
    load = next((m for line in lines if (m := _LOAD.match(line))), None)
    start = next(i for i, line in enumerate(lines) if _ROUND.match(line))
    header = lines[start + 1]
    ends = {}
    for name, key in COLUMNS.items():
        at = header.find(name, LABEL_WIDTH)
        if at >= 0:
            ends[at + len(name) - LABEL_WIDTH] = key
    rows, i = [], start + 3  # header, dashes
    while i < len(lines) and lines[i].strip() and not lines[i].startswith(_AFTER_TABLE):
        rows.append(timing_row(lines[i], ends))
        i += 1
    return dict(
        clients=int(found[1]),
        tau=int(found[2]),
        batch=int(found[3]),
        samples=int(found[4].replace(",", "")),
        model=found[5],
        augment=found[6] == "True",
        passes=int(found[7]),
        load_before=None if load is None else float(load[1]),
        cores=None if load is None else int(load[2]),
        rows=rows,
        memory=memory(lines[i:]),
    )


def memory(lines: list[str]) -> list[dict[str, Any]]:
    """Rows of the peak-memory table (MiB) after its header, if printed."""
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("peak resident memory"))
    except StopIteration:
        return []
    # The workers column may hold "a + b": split off the fixed columns at both ends.
    has_device = "device" in lines[start + 1].split()
    out = []
    for line in lines[start + 3 :]:
        t = line.split()
        if len(t) < 5 + has_device or not (t[1].isdigit() and t[2].isdigit()):
            break
        tail = t[-2:] if has_device else [t[-1], "-"]
        out.append(
            dict(
                executor=t[0],
                clients=int(t[1]),
                main_mib=float(t[2]),
                workers=" ".join(t[3 : len(t) - 1 - has_device]),
                total_mib=float(tail[0]),
                device_mib=None if tail[1] == "-" else float(tail[1]),
            )
        )
    return out


def environment(lines: list[str]) -> dict[str, Any]:
    """GPU name (UUID left out), Python and torch versions of the ``env`` stage."""
    gpu = next((m[1] for line in lines if (m := re.match(r"^GPU \d+: (.+?) \(UUID", line))), None)
    py = next((m[1] for line in lines if (m := re.match(r"^(\d+\.\d+\.\d+) \(", line))), None)
    tv = next((line.split() for line in lines if re.match(r"^\d+\.\d+\.\d+\+\S+ ", line)), None)
    return dict(
        gpu=gpu,
        python=py,
        torch=tv[0] if tv else None,
        cuda_available=(tv[1] == "True") if tv else None,
    )


def parse_logs(checks: str, extra: dict[str, str]) -> dict[str, Any]:
    """Everything the report uses from ``checks`` (checks.txt) and ``extra`` logs (name ->
    text, e.g. a rerun of one stage)."""
    parts = stages(checks)
    env = next((s for s in parts if s["name"] == "env"), None)
    out: dict[str, Any] = {
        "environment": environment(env["lines"]) if env else {},
        "stages": [{k: s[k] for k in ("name", "limit_s", "exit", "after_s")} for s in parts],
        "benches": [],
        "total_s": next(
            (int(m[1]) for line in checks.splitlines() if (m := re.match(r"^total (\d+)s$", line))),
            None,
        ),
    }
    for source, text in [("checks", checks), *extra.items()]:
        for s in stages(text, default=source):
            found = bench(s["lines"])
            if found is not None:
                out["benches"].append(dict(source=source, stage=s["name"], **found))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logs", default="records/results/gpu_logs", help="folder of the logs")
    p.add_argument("--dest", default="records/report/executor_figures.json")
    p.add_argument(
        "--extra",
        nargs="*",
        default=["tolerance.txt", "cpu_bench_full.txt", "cpu_bench_quiet.txt"],
        help="other logs in --logs (cpu_*.txt: benchmarks on the CPU machines)",
    )
    ns = p.parse_args(argv)
    logs = Path(ns.logs)
    extra = {Path(n).stem: (logs / n).read_text() for n in ns.extra if (logs / n).exists()}
    parsed = parse_logs((logs / "checks.txt").read_text(), extra)
    parsed["logs"] = ["checks.txt", *(f"{n}.txt" for n in extra)]
    Path(ns.dest).write_text(json.dumps(parsed, indent=2) + "\n")
    print(f"wrote {ns.dest}: {len(parsed['benches'])} benchmarks")


if __name__ == "__main__":
    main()

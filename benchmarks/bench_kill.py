"""Seconds from a killed worker to the run's end, per scheme (not a timed test).

Usage::

    .venv/bin/python benchmarks/bench_kill.py                       # every scheme of the matrix
    .venv/bin/python benchmarks/bench_kill.py --schemes hierarchical gossip --repeats 2

Runs the kill matrix's cases (``tests/cluster/runtime/test_one_command.py``: 3 workers, tiny
MLP, synthetic data, 20 iterations with a 0.1 s delay each, every timeout at its default) as a
user does, through ``python -m fl_r2sp.cluster``, SIGKILLs worker 1 after its second iteration
and prints per scheme:

* ``loss_s``: from the kill to the moment the run applied the loss (``lost_at`` of the
  summary: the survivors go on without the worker from then on, or the run ends);
* ``end_s``: from the kill to the command's exit (the survivors' remaining iterations, the
  final averages, the summary and plots included);
* the evidence the loss was found by, the exit status, the 1-minute load average at the kill
  and at the end (the machine is shared: read the times beside it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster.runtime.test_one_command import KILLS, kill_case  # noqa: E402


def _case(name: str, scheme: str, flags: list[str]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        load0 = os.getloadavg()[0]
        case = kill_case(Path(tmp), scheme, flags)
        load1 = os.getloadavg()[0]
    summary = case["summary"]
    killed_at = case["killed_at"]
    lost_at = summary.get("lost_at", {}).get("1")
    loss_s = f"{lost_at - killed_at:6.1f}" if lost_at is not None else "     -"
    evidence = summary.get("lost_evidence", {}).get("1", "-")
    code, status = case["proc"].returncode, summary["status"]
    return (f"{name:<22} {loss_s} {case['kill_to_end_s']:6.1f}  {evidence:<18} "
            f"{code:>4} {status:<8} {load0:5.1f} {load1:5.1f}")  # fmt: skip


def main() -> None:
    names = [s + "-permission" * ("permission" in f) for s, f, _ in KILLS]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemes", nargs="*", default=names, choices=names)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    print(f"{'scheme':<22} {'loss_s':>6} {'end_s':>6}  {'evidence':<18} exit status   "
          "load0 load1", flush=True)  # fmt: skip
    for name, (scheme, flags, _) in zip(names, KILLS, strict=True):
        if name in args.schemes:
            for _ in range(args.repeats):
                print(_case(name, scheme, flags), flush=True)


if __name__ == "__main__":
    main()

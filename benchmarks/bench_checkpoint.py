"""Checkpoint save cost as the event log grows: whole-state writes vs segments, side by side.

    .venv/bin/python benchmarks/bench_checkpoint.py --updates 400 --every 50

A virtual-clock timing run (``--clients`` clients in ``--groups`` groups, SGD skipped)
checkpoints every ``--every`` global updates. At each save it times, on the same state and
one after the other:

* ``whole``: what a save cost before segments (format 2): the whole state encoded, archived
  and written atomically as one file (here to a scratch file beside the checkpoint);
* ``segments``: the real save (:class:`fl_r2sp.fl.server.checkpoint.Checkpointer`): the head,
  plus one segment of what changed in the growing containers.

Printed per save: the update, the event log's length (job rows + records), and per method
the seconds and bytes written; at the end the ratio of the last save's costs. Timings depend
on the machine's load: compare the two columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server import checkpoint
from fl_r2sp.fl.server.checkpoint_archive import archive
from fl_r2sp.fl.server.runner import run
from fl_r2sp.fl.server.state_codec import encode
from fl_r2sp.telemetry.rundir import atomic_write_bytes


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=32, help="clients (default: 32)")
    p.add_argument("--groups", type=int, default=4, help="FL-R²SP groups (default: 4)")
    p.add_argument("--updates", type=int, default=400, help="global updates (default: 400)")
    p.add_argument("--every", type=int, default=50, help="updates between saves (default: 50)")
    return p.parse_args(argv)


def whole_save(checkpointer: checkpoint.Checkpointer, loop: Any) -> tuple[float, int]:
    """Seconds and bytes of a format-2 save of ``loop``: everything, in one file."""
    t0 = time.perf_counter()
    state = {k: v for k, v in vars(loop).items() if k not in checkpoint.TRANSIENT}
    tree, arrays = encode(state)
    data, _ = archive(checkpoint.KIND, {}, {"loop": tree}, arrays)
    atomic_write_bytes(checkpointer.directory / "whole-scratch.npz", data)
    return time.perf_counter() - t0, len(data)


def main(argv: list[str] | None = None) -> int:
    """Run, time every save both ways, print the table."""
    args = parse_args(argv)
    rows: list[tuple[int, int, float, int, float, int]] = []
    real_save = checkpoint.Checkpointer.save

    def timed_save(self: checkpoint.Checkpointer, loop: Any) -> Path:
        whole_s, whole_b = whole_save(self, loop)
        t0 = time.perf_counter()
        path = real_save(self, loop)
        seg_s = time.perf_counter() - t0
        note = json.loads((self.directory / checkpoint.CHECKPOINT_NOTE).read_text())
        seg_b = int(note["bytes"]) + int(note["segment_bytes"])  # head + this save's segment
        log_len = len(loop.events.jobs) + len(loop.events.records)
        rows.append((loop.policy.version, log_len, whole_s, whole_b, seg_s, seg_b))
        return path

    checkpoint.Checkpointer.save = timed_save  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="bench-checkpoint-") as tmp:
        cfg = RunConfig(
            dataset="digits", num_partitions=args.clients, num_groups=args.groups,
            timing_only=True, max_updates=args.updates, eval_every=10**6, plots=False,
            run_dir=tmp, checkpoint_every=args.every,
        )  # fmt: skip
        run(cfg, progress=False)
    head = ("update", "log rows", "whole s", "whole MB", "seg s", "seg MB")
    print("{:>6} {:>9} {:>8} {:>9} {:>7} {:>7}".format(*head))
    for version, log_len, ws, wb, ss, sb in rows:
        print(f"{version:6d} {log_len:9d} {ws:8.3f} {wb / 1e6:9.2f} {ss:7.3f} {sb / 1e6:7.2f}")
    if rows:
        last = rows[-1]
        print(f"last save: segments cost {last[4] / last[2]:.2f}x the whole-state write's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Pilot one training run: does it reach the stagnation rule, and in how much time?

Used to size a scale (``converge``) before any recorded run. It prints, and appends as one JSON
line to ``--log``, only what sizing needs: the stop reason, the global updates and
BSP-round equivalents run, the round at which the stagnant window began (the convergence
point), the virtual time and the wall time. It prints no accuracy, so a pilot cannot be read
as a comparison of schemes. Nothing is cached: a pilot is never a recorded run.

Run: ``python -m experiments.flr2sp.pilot --scale converge --scheme fl-r2sp-nofilter --seed 0
--executor processes --executor-workers 1 --log pilots.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.common import execution
from experiments.common.conf import SCALES
from experiments.common.run_cache import build_config, say
from experiments.flr2sp.fig15 import SCHEMES

__all__ = ["main", "pilot"]


def _cpu_s() -> float:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def pilot(scale: str, scheme: str, seed: int, how: dict[str, Any]) -> dict[str, Any]:
    """Run ``scheme`` (a :data:`~experiments.flr2sp.fig15.SCHEMES` name) once at ``scale``;
    return the sizing figures (no accuracy)."""
    from fl_r2sp.fl.server.runner import run

    diff = dict(SCHEMES[scheme])
    cfg = build_config("training", scale, seed, **how, **diff)
    started = time.perf_counter()
    cpu0 = _cpu_s()
    out = run(cfg, write=False, progress=False)
    s = out.summary
    at = s.get("converged_at")
    window_start = next((h["version"] for h in out.history if at is not None and h["time"] >= at),
                        None)  # fmt: skip
    return {
        "scale": scale,
        "scheme": scheme,
        "seed": seed,
        "stopped": s.get("stopped"),
        "converged": at is not None,
        "global_updates": s.get("global_updates"),
        "rounds_run": s.get("global_updates", 0) / cfg.eval_every,
        "rounds_cap": cfg.max_updates / cfg.eval_every,
        "converged_round": None if window_start is None else window_start / cfg.eval_every,
        "converged_at_s": at,
        "virtual_s": s.get("final_time"),
        "wall_s": round(time.perf_counter() - started, 1),
        # CPU seconds of this process and its finished workers: what the run costs on a
        # machine shared with other jobs, where the wall time says little.
        "cpu_s": round(_cpu_s() - cpu0, 1),
        "load_avg": os.getloadavg()[0],
        "how": how,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=SCALES, default="converge")
    parser.add_argument("--scheme", choices=sorted(SCHEMES), required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", default="", help="append the result as a JSON line here")
    execution.add_flags(parser)
    ns = parser.parse_args(argv)
    say(f"pilot: {ns.scheme} seed {ns.seed} at {ns.scale}")
    row = pilot(ns.scale, ns.scheme, ns.seed, dict(execution.picked(ns)))
    say("pilot: " + ", ".join(f"{k}={v}" for k, v in row.items()))
    if ns.log:
        with Path(ns.log).open("a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

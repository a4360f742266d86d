"""The real runtime and the virtual-time twin make the same decisions for the same timings.

Workers sleep scripted compute times instead of training (no throttle, one PS); the twin gets
the same times. Compared: the sequence of permissions (worker, iteration) in the order the
policy issued them, and the batch size each carries, for every iteration both ran (the twin
lets fast workers run past the target; the runtime stops each worker at it).

Where the permission order follows the order of requests (SSP), the scripted times are chosen so
that no two requests of different workers reach the coordinator within 30 ms of each other in
the twin: the runtime's communication and scheduling add a few milliseconds per iteration,
which must not reorder requests that the policy sees. R²SP's round-robin order does not depend
on it; its tuned batch sizes do depend on the measured compute times (speed ratios 4:2:1).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import pytest

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.policies.ps.r2sp import R2SPParams
from fl_r2sp.cluster.runtime.local import run_local
from fl_r2sp.cluster.schemes import scheme_params
from fl_r2sp.cluster.sim import TwinSpec, simulate

MIN_SEPARATION_S = 0.03
#: Small, so that the tuned sizes 4·v/v_slowest = 16, 8, 4 survive ~3 % of timing noise.
BATCH = 4


def _twin(params: PSParams, times: tuple[float, ...], iterations: int
          ) -> list[tuple[int, ...]]:  # fmt: skip
    spec = TwinSpec(
        params=params, num_workers=len(times), num_servers=1, model_bytes=4810 * 4,
        batch_size=BATCH, iterations=iterations, speeds=(1.0,), server_bandwidth=math.inf,
        compute_times={w: [t] * iterations for w, t in enumerate(times)},
    )  # fmt: skip
    result = simulate(spec)
    ends = sorted((row["t_end"], row["worker"]) for row in result.rows if row["iteration"] >= 1)
    seps = [b[0] - a[0] for a, b in zip(ends, ends[1:], strict=False) if a[1] != b[1]]
    if params.scheme != "r2sp":  # R²SP's order is fixed; the others follow request order
        assert min(seps) >= MIN_SEPARATION_S  # precondition of a meaningful comparison
    return _permissions(result.trace, iterations)


def _permissions(trace: list[dict[str, Any]], iterations: int) -> list[tuple[int, ...]]:
    return [
        (int(e["worker"]), int(e["iteration"]), int(e["batch_size"]))
        for e in trace
        if e["event"] == "permission" and int(e["iteration"]) < iterations
    ]


def _runtime(tmp: Path, params: PSParams, times: tuple[float, ...], iterations: int
             ) -> list[tuple[int, ...]]:  # fmt: skip
    cfg = ClusterConfig(
        workers=len(times), servers=1, scheme=params, model="mlp", dataset="synthetic",
        batch_size=BATCH, max_iterations=iterations, timeout_s=20.0, run_timeout_s=60.0,
        run_dir=str(tmp), eval_samples=0, progress_s=0.0, plots=False,
        scripted_compute=tuple((t,) * iterations for t in times),
    )  # fmt: skip
    run = run_local(cfg)
    assert run.summary is not None and run.summary["status"] == "ok", run
    with open(Path(run.summary["run_dir"]) / "permissions.csv", newline="") as fh:
        return _permissions(list(csv.DictReader(fh)), iterations)


@pytest.mark.parametrize(
    ("params", "times", "iterations"),
    [
        # Tuning by speed ratio: 4·v/v_slowest = 16, 8, 4 from iteration 3 on (warm-up 2).
        (scheme_params("r2sp", tuning="proportional", tuning_warmup=2), (0.12, 0.24, 0.48), 6),
        # SSP with s = 1: the fast workers are held and released as the slow one advances.
        (scheme_params("ssp", bound=1), (0.07, 0.17, 0.41), 6),
    ],
)
def test_runtime_and_twin_issue_the_same_permissions(
    tmp_path: Path, params: PSParams, times: tuple[float, ...], iterations: int
) -> None:
    want = _twin(params, times, iterations)
    got = _runtime(tmp_path, params, times, iterations)
    assert got == want
    assert len(got) == len(times) * iterations
    if isinstance(params, R2SPParams):
        assert {b for w, k, b in got if k >= 3} == {16, 8, 4}  # tuning really happened

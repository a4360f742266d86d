"""Multi-node runs keep torchrun: two torchrun agents on loopback (``--nnodes 2``, c10d
rendezvous on a private port) start the ranks of one ASP job, which trains and writes its run
folder. Both agents are bounded by the run's own timeouts (and :data:`HANG_S`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fl_r2sp.cluster.local import free_port

HANG_S = 400.0


@pytest.mark.skipif(shutil.which("torchrun", path=os.path.dirname(sys.executable)) is None,
                    reason="torchrun is not installed beside this Python")  # fmt: skip
def test_two_torchrun_agents_on_loopback_train_one_job(tmp_path: Path) -> None:
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    agent = [torchrun, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
             "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", uuid.uuid4().hex[:8],
             "--max-restarts", "0", "-m", "fl_r2sp.cluster.rank",
             "--scheme", "asp", "--workers", "3", "--servers", "1", "--model", "mlp",
             "--dataset", "synthetic", "--iterations", "5", "--batch-size", "8",
             "--timeout", "30", "--run-timeout", "120", "--progress", "0", "--no-plots",
             "--eval-samples", "0", "--run-dir", str(tmp_path)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    nodes = [subprocess.Popen(agent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]  # fmt: skip
    outs = [node.communicate(timeout=HANG_S) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [err[-2000:] for _, err in outs]
    (run_dir,) = [p.parent for p in tmp_path.glob("*/summary.json")]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["iterations_per_worker"] == [5, 5, 5]
    ranks = json.loads((run_dir / "run.json").read_text())["ranks"]
    assert [(r["rank"], r["role"]) for r in ranks] == [
        (0, "ps"), (1, "worker"), (2, "worker"), (3, "worker")]  # fmt: skip
    assert len({r["pid"] for r in ranks}) == 4

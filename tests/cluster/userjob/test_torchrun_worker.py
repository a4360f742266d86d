"""A user's own script under torchrun across two agents on loopback (``--nnodes 2``, c10d
rendezvous on a private port): each process calls :func:`fl_r2sp.cluster.run_worker` with the
user's job, rank 0 gets the result, whose weights load into the user's module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch

from fl_r2sp.cluster.local import free_port
from tests.cluster.userjob import job

HANG_S = 400.0
ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import sys
import fl_r2sp.cluster as cluster

if __name__ == "__main__":
    result = cluster.run_worker(
        model="tests.cluster.userjob.job:tiny_net", dataset="tests.cluster.userjob.job:blobs",
        loss="tests.cluster.userjob.job:smooth_loss", scheme="partial", workers=4,
        group_min=2, iterations=5, batch_size=8, timeout=30.0, run_timeout=120.0,
        run_dir=sys.argv[1])
    if result is not None:
        print("RESULT", result.run_dir, sorted(result.state_dict), flush=True)
"""


@pytest.mark.skipif(shutil.which("torchrun", path=os.path.dirname(sys.executable)) is None,
                    reason="torchrun is not installed beside this Python")  # fmt: skip
def test_a_users_torchrun_script_trains_by_the_worker_entry(tmp_path: Path) -> None:
    script = tmp_path / "train_job.py"
    script.write_text(SCRIPT)
    runs = tmp_path / "runs"
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    agent = [torchrun, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
             "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", uuid.uuid4().hex[:8],
             "--max-restarts", "0", str(script), str(runs)]  # fmt: skip
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    nodes = [subprocess.Popen(agent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=tmp_path) for _ in range(2)]  # fmt: skip
    outs = [node.communicate(timeout=HANG_S) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [err[-2000:] for _, err in outs]
    printed = [line for out, _ in outs for line in out.splitlines() if line.startswith("RESULT")]
    assert len(printed) == 1  # rank 0 alone gets the result
    (run_dir,) = [p.parent for p in runs.glob("*/summary.json")]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["scheme"] == "partial"
    assert printed[0].startswith(f"RESULT {run_dir} ")
    state = torch.load(run_dir / "final_params.pt", weights_only=True)["state_dict"]
    job.TinyNet().load_state_dict(state)

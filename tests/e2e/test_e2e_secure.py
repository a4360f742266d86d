"""End to end: ``scripts/deploy_local.py --secure --intruders`` on loopback (one SuperLink start).

TLS with a private CA and SuperNode authentication; two registered SuperNodes run the app
while five intruders (no TLS, another CA, an unregistered key, no key, and a stranger that
registers a fresh key of its own), each claiming a real node's partition id, try to join. The
run must complete, the SuperLink must refuse the first four and the ServerApp the stranger
(its key is not the one the node manifest binds to the partition), which gets no work.
About 2-4 minutes on 2 loaded cores.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fl_r2sp.fl.flower.processes import pids_matching, pids_with_env
from fl_r2sp.telemetry.rundir import complete_run_dirs
from tests.paths import REPO

pytestmark = pytest.mark.e2e


def test_secure_deployment_completes_and_refuses_every_intruder(tmp_path: Path) -> None:
    home, runs = tmp_path / "home", tmp_path / "runs"
    overrides = (
        f"num-groups=1 max-updates=2 eval-every=1 local-iterations=3 plots=false "
        f"delay='constant(value=0.01)' run-dir='{runs}'"
    )
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "deploy_local.py"),
        "--secure",
        "--intruders",
        "--num-supernodes",
        "2",
        "--timeout",
        "500",
        "--flwr-home",
        str(home),
        "--run-config",
        overrides,
    ]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "status finished:completed at the SuperLink" in out
    assert "SuperLink lists 3 nodes, 3 online; 2 registered, 1 registered by strangers" in out
    for name, cause in (
        ("insecure", "no connection"),
        ("wrong-ca", "TLS certificate not trusted"),
        ("unregistered-key", "not registered"),
        ("no-key", "no key: authentication required"),
        # The stranger registered a fresh key (Flower allows it) and claimed partition 0: the
        # ServerApp refused it by the node manifest, naming the key bound to partition 0.
        ("stranger", "key SHA256:"),
    ):
        assert f"intruder {name}: refused ({cause}" in out, out[-3000:]
    assert "refused, no work for it: partition 0 belongs to the key SHA256:" in out
    logs = home / "logs"
    assert "Receiving: train message" not in (logs / "intruder-stranger.log").read_text()
    assert "Receiving: train message" in (logs / "supernode-0.log").read_text()
    (folder,) = complete_run_dirs(runs)
    summary = json.loads((folder / "summary.json").read_text())["summary"]
    # Two rounds of the two real nodes' updates, nobody else's.
    assert summary["global_updates"] == 2 and summary["updates_accepted"] == 4
    with open(folder / "jobs.csv") as fh:
        assert {int(row["cid"]) for row in csv.DictReader(fh)} == {0, 1}
    assert not pids_with_env("FLWR_HOME", str(home.resolve()))
    assert not pids_matching(str(home.resolve()))

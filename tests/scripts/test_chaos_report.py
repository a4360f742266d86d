"""``scripts/chaos.py``'s checks on a hand-made run folder: stalled gaps, idle re-attachments.

Folder: group round times 2, 2, 2 (median 2, so a gap > 4 s is stalled); global updates
(t, group) at (2, 0), (3, 1), (4, 0), (5, 1), (6, 0), (7, 1), (12, 0): gaps 2, 1, 1, 1, 1, 1,
5, the last stalled. Partition 2 (group 0) re-attached at 2.5: group 0's next two
applications are at 4 and 6, and it answered a job sent at 3.0 at 5.5 (in time). Partition 3
(group 1) re-attached at 3.5: group 1's next two are at 5 and 7; its job came back at 8.0
(late). Partition 1 (group 1) re-attached at 6.5: only one more group-1 application
follows and no answer came, so there is no verdict (None, not a failure); partition 0
(group 0) re-attached at 6.2: one more group-0 application follows and it answered at 11,
before the run ended (in time).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.run_watch import RunEnd
from fl_r2sp.fl.server.run_files import write_failed_start
from tests.paths import REPO

#: The SuperLink's word on a run that completed, and on one whose stream ended early and
#: that was given up (the folder alone does not decide).
COMPLETED = RunEnd(run_id=1, exit_code=0, status="finished:completed")
GAVE_UP = RunEnd(run_id=1, exit_code=0, gave_up="no progress within 180 s", reattached=1)


def load_chaos() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chaos", REPO / "scripts" / "chaos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chaos"] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def write_folder(root: Path, status: str = "completed") -> Path:
    folder = root / "fl-r2sp-digits-s0"
    folder.mkdir(parents=True)
    summary = {"summary": {"status": status, "global_updates": 7}}
    (folder / "summary.json").write_text(json.dumps(summary))
    rows = [{"kind": "group_collect", "t": t, "round_time": 2.0} for t in (1, 2, 3)]
    applies = [(2, 0), (3, 1), (4, 0), (5, 1), (6, 0), (7, 1), (12, 0)]
    rows += [{"kind": "group_apply", "t": float(t), "group": g} for t, g in applies]
    rows += [
        {"kind": "client_rejoin", "t": t, "cid": c, "group": g, "revived": True}
        for t, c, g in ((2.5, 2, 0), (3.5, 3, 1), (6.5, 1, 1), (6.2, 0, 0))
    ]
    (folder / "records.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    with open(folder / "jobs.csv", "w", newline="") as fh:
        out = csv.DictWriter(fh, ["cid", "job", "dispatch", "push_end", "failed"])
        out.writeheader()
        out.writerow({"cid": 2, "job": 4, "dispatch": 3.0, "push_end": 5.5})
        out.writerow({"cid": 3, "job": 4, "dispatch": 4.0, "push_end": 8.0})
        out.writerow({"cid": 3, "job": 3, "dispatch": 1.0, "push_end": ""})  # lost, no reply
        # Given up as offline after the rejoin: not an answer.
        out.writerow(
            {"cid": 1, "job": 2, "dispatch": 6.0, "push_end": 6.6, "failed": "node offline"}
        )
        out.writerow({"cid": 0, "job": 5, "dispatch": 6.3, "push_end": 11.0})
    return folder


def test_gaps_stalls_and_rejoins_are_read_from_the_folder(tmp_path: Path) -> None:
    chaos = load_chaos()
    write_folder(tmp_path)
    v = chaos.analyse(tmp_path)
    assert v.gaps == [2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0] and v.median_round == 2.0
    assert v.stalled == [(12.0, 5.0)]
    assert v.rejoins == [(2, 2.5, True), (3, 3.5, False), (1, 6.5, None), (0, 6.2, True)]
    assert not v.ok
    assert chaos.report(tmp_path, COMPLETED) == 1


def test_a_clean_folder_passes(tmp_path: Path) -> None:
    chaos = load_chaos()
    folder = write_folder(tmp_path)
    rows = [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]
    rows = [r for r in rows if not (r["kind"] == "group_apply" and r["t"] == 12.0)]
    rows = [r for r in rows if not (r["kind"] == "client_rejoin" and r["cid"] == 3)]
    (folder / "records.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    v = chaos.analyse(tmp_path)
    assert v.ok and not v.stalled and chaos.report(tmp_path, COMPLETED) == 0
    # A clean folder of a run the SuperLink does not call completed does not pass.
    assert chaos.report(tmp_path, GAVE_UP) == 1
    # A failed run never passes, however smooth.
    (folder / "summary.json").write_text(json.dumps({"summary": {"status": "failed"}}))
    assert not chaos.analyse(tmp_path).ok


def test_a_run_that_failed_before_training_is_reported_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chaos = load_chaos()
    cfg = RunConfig(run_dir=str(tmp_path))
    write_failed_start(cfg, "partition discovery: missing partition ids: 22")
    assert chaos.report(tmp_path, COMPLETED) == 1
    assert "status failed; stopped: before training" in capsys.readouterr().out


def test_the_first_update_gap_is_start_up_not_a_stall(tmp_path: Path) -> None:
    """The gap from the loop's start to the first update (ClientApps starting) is reported in
    ``gaps`` but does not make the run stalled; the same gap later does."""
    chaos = load_chaos()
    folder = write_folder(tmp_path)
    rows = [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]
    rows = [r for r in rows if not (r["kind"] == "group_apply" and r["t"] == 12.0)]
    rows = [r for r in rows if not (r["kind"] == "client_rejoin" and r["cid"] == 3)]
    for r in rows:  # every event 30 s later: a 32 s first gap, the rest as before
        r["t"] += 30.0
    (folder / "records.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    with open(folder / "jobs.csv", newline="") as fh:
        jobs = [
            {**j, "dispatch": float(j["dispatch"]) + 30.0,
             "push_end": float(j["push_end"]) + 30.0 if j["push_end"] else ""}
            for j in csv.DictReader(fh)
        ]  # fmt: skip
    with open(folder / "jobs.csv", "w", newline="") as fh:
        out = csv.DictWriter(fh, list(jobs[0]))
        out.writeheader()
        out.writerows(jobs)
    v = chaos.analyse(tmp_path)
    assert v.gaps[0] == 32.0 and not v.stalled and v.ok

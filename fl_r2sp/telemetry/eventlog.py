"""The event log every run writes: one row per client job plus policy records.

Client-job rows (``jobs``) carry the phases of one round of one client:
dispatch (= pull start), pull end (= model received = train start), train
end, injected delay, push start/end, wait end (when the next model was sent),
group, round tag, straggler flag and cosine score. Policy records
(``records``: group collection/application, blacklisting, evaluations) are
kept as (time, kind, fields) rows. Records that name a ``cid`` and a ``tag``
(or the ``round`` a score refers to) are merged into that client's job row
too, so a job row shows its cosine score and straggler flag.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

JOB_FIELDS = (
    "cid",
    "job",
    "tag",
    "group",
    "dispatch",
    "pull_end",
    "train_end",
    "delay",
    "push_start",
    "push_end",
    "wait_end",
    "straggler",
    "cosine",
    "failed",
    "in_flight",
)


class EventLog:
    """Collects job rows and policy records in memory; writes CSV/JSON."""

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self._open: dict[tuple[int, int], dict[str, Any]] = {}
        self._last_job: dict[int, dict[str, Any]] = {}

    def job(self, cid: int, index: int) -> dict[str, Any]:
        """The row of job ``index`` of client ``cid`` (created on first use)."""
        key = (cid, index)
        row = self._open.get(key)
        if row is None:
            row = {"cid": cid, "job": index}
            self._open[key] = row
            self.jobs.append(row)
            prev = self._last_job.get(cid)
            self._last_job[cid] = row
            row["_prev"] = prev
        return row

    def dispatched(self, cid: int, index: int, tag: int, now: float, group: int | None) -> None:
        """A job was sent: closes the client's previous row's wait phase."""
        row = self.job(cid, index)
        row.update(tag=tag, dispatch=now, group=group)
        prev = row.pop("_prev", None)
        if prev is not None and "wait_end" not in prev:
            prev["wait_end"] = now

    def record(self, now: float, kind: str, fields: dict[str, Any]) -> None:
        """A policy/loop record; merged into the job row it names, if any."""
        self.records.append({"time": now, "kind": kind, **fields})
        # Scores name the group round they scored, which is the job's tag.
        tag = fields.get("tag", fields.get("round"))
        if "cid" in fields and tag is not None:
            row = self._last_job.get(int(fields["cid"]))
            if row is not None and row.get("tag") == tag:
                for k in ("straggler", "cosine"):
                    if k in fields and fields[k] is not None:
                        row[k] = fields[k]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """All records of one kind, in time order."""
        return [r for r in self.records if r["kind"] == kind]

    def write(self, directory: Path) -> None:
        """Write ``jobs.csv`` and ``records.jsonl`` into ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "jobs.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=JOB_FIELDS, extrasaction="ignore")
            writer.writeheader()
            for row in self.jobs:
                writer.writerow({k: row.get(k, "") for k in JOB_FIELDS})
        with open(directory / "records.jsonl", "w") as fh:
            for rec in self.records:
                fh.write(json.dumps(rec, default=_jsonable) + "\n")


def _jsonable(value: Any) -> Any:
    """Make NumPy scalars and sets JSON-serialisable."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return str(value)

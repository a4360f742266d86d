"""What a finished run leaves behind: :class:`RunOutput`.

Returned by :func:`fl_r2sp.fl.server.runner.run` (and the FedAvg baseline) and
written to the run's folder by :func:`fl_r2sp.fl.server.run_files.write_run_dir`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fl_r2sp.telemetry.eventlog import EventLog


@dataclass
class RunOutput:
    """What a finished run leaves behind.

    Attributes
    ----------
    weights : np.ndarray
        Final global model (flat float32).
    history : list of dict
        Central evaluations: version, time, loss, accuracy, wall.
    summary : dict
        Headline figures (final accuracy, avg push/pull/round, outliers ...).
    events : EventLog
        Job rows and policy records.
    traces : dict, default {}
        Server link traces: name -> (interval start times, bytes).
    run_dir : Path or None, default None
        Where the files were written (None if not written).
    """

    weights: np.ndarray
    history: list[dict[str, float]]
    summary: dict[str, Any]
    events: EventLog
    traces: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    run_dir: Path | None = None

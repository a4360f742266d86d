"""What one selective-reduce simulation runs: :class:`ReduceSimSpec` (defaults: the paper's).

n workers on one non-blocking switch (contention only at the edges), each with an uplink and a
downlink of b_i; model size v; per-step latency α; training stops after ``duration_s`` of
virtual time. Defaults follow the paper (``docs/paper-notes.md`` §5.2): v = 500 MB (10^6 bytes),
α = 1 ms, λ = 0.05, 20 Gbps maximum, 100 s. See :mod:`.workload` for the compute traces
and the bandwidth draws, :mod:`.engine` for the event loop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fl_r2sp.cluster.policies.reduce import ProgressModel, ReduceParams
from fl_r2sp.cluster.sim.reduce.workload import TRACES

NETWORKS: tuple[str, ...] = ("analytic", "flow")
STARTS: tuple[str, ...] = ("warm", "cold")


@dataclass(frozen=True)
class ReduceSimSpec:
    """One trial.

    Parameters
    ----------
    params : ReduceParams
        Scheme and knobs.
    num_workers : int, default 40
        n >= 1.
    duration_s : float, default 100.0
        Virtual seconds of training (> 0); syncs that end later are not counted.
    model_bytes : float, default 500e6
        Model size v in bytes (> 0).
    alpha_s : float, default 1e-3
        Per-step latency α in seconds (>= 0).
    bw_lambda : float, default 0.05
        λ of the bandwidth draw, in (0, 1].
    bw_max_gbps : float, default 20.0
        Bandwidth scale of the draw (Gbps).
    bandwidth_gbps : sequence of float, optional
        Explicit per-worker bandwidths (Gbps) instead of the draw.
    trace : str, default "transformer"
        Compute-time proxy (:data:`~fl_r2sp.cluster.sim.reduce.workload.TRACES`).
    trace_samples : sequence of float, optional
        Measured compute times to resample instead of the proxy (see ``load_trace_csv``).
    compute_scale : float, default 1.0
        Multiplier (> 0) of every drawn compute time (a sensitivity knob; the warm-start
        sample is scaled alike). Scripted times are not scaled.
    compute_script : mapping of int to sequence of float, optional
        Scripted compute time per worker and round (the last value repeats); overrides draws.
    network : str, default "analytic"
        "analytic" (ring time formula) or "flow" (ring steps as flows on fl_r2sp.emulation).
    approx_time : bool, default False
        Analytic mode and BPAWR use the paper's approximation 2mα + 2v/min b.
    start : str, default "warm"
        BPAWR's compute distribution: "warm" (known: ``warm_samples`` draws of the trace) or
        "cold" (learnt from the rounds observed so far).
    warm_samples : int, default 4096
        Size of the warm-start sample (>= 1).
    bw_error : float, default 0.0
        Estimation error e in [0, 1) of the controller's bandwidth view.
    lost_at : mapping of int to float, optional
        Worker -> virtual time at which it dies.
    seed : int, default 0
        Trial seed (bandwidths, compute draws, errors).
    progress : ProgressModel, optional
        Override BPAWR's progress model (tests: an oracle). Not part of equality.
    """

    params: ReduceParams
    num_workers: int = 40
    duration_s: float = 100.0
    model_bytes: float = 500e6
    alpha_s: float = 1e-3
    bw_lambda: float = 0.05
    bw_max_gbps: float = 20.0
    bandwidth_gbps: Sequence[float] | None = None
    trace: str = "transformer"
    trace_samples: Sequence[float] | None = None
    compute_scale: float = 1.0
    compute_script: Mapping[int, Sequence[float]] = field(default_factory=dict)
    network: str = "analytic"
    approx_time: bool = False
    start: str = "warm"
    warm_samples: int = 4096
    bw_error: float = 0.0
    lost_at: Mapping[int, float] = field(default_factory=dict)
    seed: int = 0
    progress: ProgressModel | None = field(default=None, compare=False)

    def validate(self) -> ReduceSimSpec:
        """Check the spec; return ``self``.

        Raises
        ------
        ValueError
            Naming the bad field.
        """
        self.params.validate()
        n = self.num_workers
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"num_workers must be an integer >= 1, got {n!r}")
        _positive("duration_s", self.duration_s)
        _positive("model_bytes", self.model_bytes)
        _positive("compute_scale", self.compute_scale)
        if not (math.isfinite(self.alpha_s) and self.alpha_s >= 0):
            raise ValueError(f"alpha_s must be finite seconds >= 0, got {self.alpha_s!r}")
        if self.bandwidth_gbps is not None and (
            len(self.bandwidth_gbps) != n or min(self.bandwidth_gbps) <= 0
        ):
            raise ValueError(f"bandwidth_gbps needs {n} values > 0")
        if self.trace not in TRACES:
            raise ValueError(f"unknown trace {self.trace!r}; choose one of {TRACES}")
        if self.network not in NETWORKS:
            raise ValueError(f"unknown network {self.network!r}; choose one of {NETWORKS}")
        if self.start not in STARTS:
            raise ValueError(f"unknown start {self.start!r}; choose one of {STARTS}")
        if self.warm_samples < 1:
            raise ValueError(f"warm_samples must be >= 1, got {self.warm_samples}")
        for w in {**self.compute_script, **self.lost_at}:
            if not 0 <= w < n:
                raise ValueError(f"worker {w} in compute_script/lost_at is out of range 0..{n - 1}")
        for w, times in self.compute_script.items():
            if len(times) == 0 or min(times) < 0:
                raise ValueError(f"compute_script[{w}] needs >= 1 time >= 0 seconds")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        return self


def _positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")

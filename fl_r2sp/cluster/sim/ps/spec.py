"""What the virtual-time twin simulates: :class:`TwinSpec`.

Topology: S parameter-server shards, each with its own egress (``ps{s}-out``) and ingress
(``ps{s}-in``) link of ``server_bandwidth`` bytes/s, and N workers, each with a downlink
(``w{i}-down``) and uplink (``w{i}-up``) of ``worker_bandwidth`` bytes/s (full duplex). A pull
moves ``model_bytes / S`` from every shard to the worker, a push the reverse, as flows that share
links max-min fairly (:class:`fl_r2sp.emulation.Network`).

Compute time of worker ``i``'s iteration ``k`` with batch size ``b``::

    (b / speeds[i]) * compute_multipliers[i] * jitter + iteration_delays[i]

or the scripted ``compute_times[i][k]`` (+ the delay) when given. ``jitter`` is a log-normal factor
with mean 1 and coefficient of variation ``jitter_cv``, drawn from a generator seeded by
``(seed, worker)``, so a run is deterministic for a seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fl_r2sp.cluster.policies.common.params import PSParams


@dataclass(frozen=True)
class TwinSpec:
    """One twin run.

    Parameters
    ----------
    params : PSParams
        Scheme and knobs (the same object the runtime uses).
    num_workers : int
        N >= 1.
    num_servers : int
        S >= 1 PS shards; the model is split equally over them.
    model_bytes : float
        Bytes of the full model (one pull or push moves this much in total).
    batch_size : int
        Initial batch size of every worker (>= 1).
    iterations : int
        The run ends when every live worker has completed this many iterations (>= 1);
        faster workers may complete more meanwhile.
    speeds : tuple of float
        Samples/s per worker (length N, or 1 for all). Unused for scripted workers.
    server_bandwidth : float
        Bytes/s of each shard's egress and of its ingress (inf = unlimited).
    worker_bandwidth : float, default inf
        Bytes/s of each worker's downlink and of its uplink.
    compute_multipliers : tuple of float, default ()
        Per-worker factor on the compute time (empty = all 1).
    iteration_delays : tuple of float, default ()
        Per-worker seconds added to every iteration before the push (empty = all 0).
    compute_times : mapping of int to sequence of float, default {}
        Scripted compute seconds per worker and iteration (the last value repeats once the
        script runs out); overrides the speed model for those workers.
    jitter_cv : float, default 0.0
        Coefficient of variation of the log-normal compute-time factor (0 = none).
    latency_s : float, default 0.0
        Fixed seconds each flow pays before its bytes move.
    lost_at : mapping of int to float, default {}
        Worker -> virtual time at which it dies (its flows are cancelled and the policy told).
    seed : int, default 0
        Seed of the jitter.
    max_time : float, default inf
        Stop at this virtual time even if the iteration target is not reached.
    """

    params: PSParams
    num_workers: int
    num_servers: int
    model_bytes: float
    batch_size: int
    iterations: int
    speeds: tuple[float, ...]
    server_bandwidth: float
    worker_bandwidth: float = math.inf
    compute_multipliers: tuple[float, ...] = ()
    iteration_delays: tuple[float, ...] = ()
    compute_times: Mapping[int, Sequence[float]] = field(default_factory=dict)
    jitter_cv: float = 0.0
    latency_s: float = 0.0
    lost_at: Mapping[int, float] = field(default_factory=dict)
    seed: int = 0
    max_time: float = math.inf

    def per_worker(self, values: tuple[float, ...], default: float, name: str) -> list[float]:
        """Expand a per-worker tuple (empty = default, length 1 = everyone)."""
        if not values:
            return [default] * self.num_workers
        if len(values) == 1:
            return [float(values[0])] * self.num_workers
        if len(values) != self.num_workers:
            raise ValueError(f"{name} has {len(values)} values for {self.num_workers} workers")
        return [float(v) for v in values]

    def validate(self) -> TwinSpec:
        """Check the spec; return ``self``.

        Raises
        ------
        ValueError
            Naming the bad field.
        """
        self.params.validate()
        for name in ("num_workers", "num_servers", "batch_size", "iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (math.isfinite(self.model_bytes) and self.model_bytes >= 0):
            raise ValueError(f"model_bytes must be finite and >= 0, got {self.model_bytes!r}")
        for name in ("server_bandwidth", "worker_bandwidth"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 bytes/s, got {getattr(self, name)!r}")
        scripted = set(self.compute_times)
        if any(not 0 <= w < self.num_workers for w in scripted | set(self.lost_at)):
            raise ValueError(f"worker index out of range 0..{self.num_workers - 1}")
        if any(len(v) == 0 or min(v) < 0 for v in self.compute_times.values()):
            raise ValueError("compute_times needs a non-empty list of seconds >= 0 per worker")
        if len(scripted) < self.num_workers:
            speeds = self.per_worker(self.speeds, math.nan, "speeds")
            if not all(s > 0 for s in speeds):
                raise ValueError(f"speeds must be > 0 samples/s for every worker, got {speeds}")
        if not all(m > 0 for m in self.per_worker(self.compute_multipliers, 1.0, "multipliers")):
            raise ValueError("compute_multipliers must be > 0")
        if not all(d >= 0 for d in self.per_worker(self.iteration_delays, 0.0, "delays")):
            raise ValueError("iteration_delays must be >= 0 s")
        if not (self.jitter_cv >= 0 and self.latency_s >= 0):
            raise ValueError("jitter_cv and latency_s must be >= 0")
        return self

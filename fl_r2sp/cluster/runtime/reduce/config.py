"""Configuration of an all-reduce-family run (all reduce, partial reduce, selective reduce).

A :class:`ReduceRunConfig` wraps the shared :class:`~fl_r2sp.cluster.config.ClusterConfig`
(model, data, learning rate, seeds, timeouts, emulated slow machines, scripted compute) and
adds the decentralised runtime's knobs. There is no parameter server: every rank is a worker
(``world_size == workers``; ``base.servers`` is ignored) and rank 0 also runs the controller.

Emulated links: each worker's link is capped by a token bucket at ``round(M·u, 3)`` MB/s with
u ~ U[λ, 1] drawn from a seeded generator (the selective-reduce paper's round(20u, 3) Gbps,
scaled down to M = ``link_max_mb_s`` so that it binds on one machine), or at the explicit
``link_caps_mb_s``. A reduce of m members charges each member's bucket with the ring
all-reduce's per-member traffic 2(m − 1)/m · v, chunk by chunk, so a group moves at the pace
of its slowest member, as :func:`~fl_r2sp.cluster.policies.reduce.ring_time` assumes.

Stopping: every round costs one ticket from the global budget ``workers · max_iterations``
(``store.add``); a worker whose ticket is beyond the budget leaves, and leaving shrinks the
controller's live set, so no last straggler ever waits for partners that will not come.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fl_r2sp.cluster.config import ClusterConfig, json_float, unjson_float
from fl_r2sp.cluster.policies.reduce import REDUCE_SCHEMES, ReduceParams
from fl_r2sp.cluster.runtime.peer.config import (
    PeerRunMixin,
    run_kwargs,
    run_to_dict,
)

BW_ESTIMATES: tuple[str, ...] = ("measured", "known")
#: Controller's bandwidth prior per worker when links are not capped (bytes/s; any equal
#: value gives the same groups: BAG only compares bandwidths).
UNCAPPED_PRIOR_BYTES_S = 1e9


@dataclass(frozen=True)
class ReduceRunConfig(PeerRunMixin):
    """An all-reduce-family run (defaults in brackets).

    Parameters
    ----------
    base : ClusterConfig
        Shared knobs; ``workers``, ``model``, ``dataset``, ``batch_size``, ``lr``,
        ``max_iterations`` (rounds per worker: the ticket budget is workers x this),
        ``loss_threshold`` / ``convergence_window``, ``chunk_kb``, ``compute_multipliers``,
        ``iteration_delays``, ``scripted_compute``, ``devices``, ``threads``, ``seed``,
        ``timeout_s``, ``run_timeout_s``, ``run_dir``, ``plots`` are used (no test-set
        evaluation, no progress lines: ``python -m fl_r2sp.cluster`` refuses those flags here).
    reduce : ReduceParams [ReduceParams("partial")]
        Scheme and controller knobs.
    link_max_mb_s : float [0.0]
        M of the cap draw round(M·u, 3) MB/s (0 = links not capped).
    bw_lambda : float [0.05]
        λ of the cap draw, in (0, 1].
    link_caps_mb_s : tuple of float [()]
        Explicit per-worker caps in MB/s (> 0), instead of the draw.
    bw_estimate : str ["measured"]
        The controller's bandwidth view: "measured" (every worker starts at the same prior;
        after each reduce each member's estimate becomes the highest rate any of its reduces
        reached, a lower bound of its link) or "known" (the caps themselves).
    alpha_s : float [1e-3]
        Per-step latency α of BPAWR's ring-time estimate.
    ready_timeout_s : float [60.0]
        A worker that has not reported its round this long after the round began is lost
        (it must exceed the slowest compute round).
    cache_groups : int [64]
        Process groups each worker keeps (least recently used evicted, decided by the
        controller so all members agree); 0 = build one per reduce and drop it after.
    """

    base: ClusterConfig = field(default_factory=ClusterConfig)
    reduce: ReduceParams = field(default_factory=lambda: ReduceParams("partial"))
    link_max_mb_s: float = 0.0
    bw_lambda: float = 0.05
    link_caps_mb_s: tuple[float, ...] = ()
    bw_estimate: str = "measured"
    alpha_s: float = 1e-3
    ready_timeout_s: float = 60.0
    cache_groups: int = 64

    @property
    def scheme_name(self) -> str:
        """The ``--scheme`` this run plays (the scheme table's key)."""
        return self.reduce.scheme

    @property
    def budget(self) -> int:
        """Global ticket budget: rounds over all workers."""
        return self.base.workers * self.base.max_iterations

    def validate(self, check_model: bool = True) -> ReduceRunConfig:
        """Check every field; return ``self``.

        Raises
        ------
        ValueError
            Naming the field, its value and what is allowed.
        """
        self.base.validate(check_model=check_model)
        self.reduce.validate()
        if self.reduce.scheme not in REDUCE_SCHEMES:
            raise ValueError(f"unknown reduce scheme {self.reduce.scheme!r}")
        self.reduce.check_workers(self.base.workers)
        for name in ("link_max_mb_s", "alpha_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not (math.isfinite(self.ready_timeout_s) and self.ready_timeout_s > 0):
            raise ValueError(f"ready_timeout_s must be > 0 seconds, got {self.ready_timeout_s!r}")
        if not 0.0 < self.bw_lambda <= 1.0:
            raise ValueError(f"bw_lambda must lie in (0, 1], got {self.bw_lambda!r}")
        caps = self.link_caps_mb_s
        if caps and (len(caps) != self.base.workers or not all(c > 0 for c in caps)):
            raise ValueError(f"link_caps_mb_s needs {self.base.workers} values > 0, got {caps}")
        if self.bw_estimate not in BW_ESTIMATES:
            raise ValueError(f"bw_estimate must be one of {BW_ESTIMATES}, got {self.bw_estimate!r}")
        if isinstance(self.cache_groups, bool) or not (
            isinstance(self.cache_groups, int) and self.cache_groups >= 0
        ):
            raise ValueError(f"cache_groups must be an integer >= 0, got {self.cache_groups!r}")
        return self

    def caveats(self) -> list[str]:
        """Warnings about settings a user may mean (p = n; one worker)."""
        return self.base.caveats() + self.reduce.check_workers(self.base.workers)

    def group_timeout_s(self, model_bytes: float, members: int, min_cap_mb_s: float) -> float:
        """How long the controller waits for a launched group's reports: two gloo timeouts
        (building the group, reducing) plus twice the throttled ring transfer, plus 1 s."""
        moved = 2.0 * (members - 1) / members * model_bytes / (min_cap_mb_s * 1e6)
        return 2.0 * self.base.timeout_s + 2.0 * moved + 1.0

    def queue_timeout_s(self, model_bytes: float) -> float:
        """How long a ready worker waits for its assignment before it leaves: a partner may
        first finish a reduce (the group timeout of the slowest full group) and then compute a
        round (``ready_timeout_s``); 1 s margin."""
        caps = self.link_caps()
        slowest = min(caps) if caps else math.inf
        return self.ready_timeout_s + self.group_timeout_s(model_bytes, self.base.workers,
                                                           slowest) + 1.0  # fmt: skip

    def link_caps(self) -> tuple[float, ...]:
        """Per-worker caps in MB/s: explicit, drawn (seeded by ``base.seed``), or () uncapped."""
        if self.link_caps_mb_s:
            return tuple(float(c) for c in self.link_caps_mb_s)
        if self.link_max_mb_s <= 0:
            return ()
        rng = np.random.default_rng([self.base.seed, 4242])
        u = rng.uniform(self.bw_lambda, 1.0, self.base.workers)
        return tuple(max(0.001, round(self.link_max_mb_s * float(x), 3)) for x in u)

    def bandwidth_prior(self) -> list[float]:
        """The controller's initial bandwidth estimate per worker, bytes/s."""
        caps = self.link_caps()
        n = self.base.workers
        if not caps:
            return [UNCAPPED_PRIOR_BYTES_S] * n
        if self.bw_estimate == "known":
            return [c * 1e6 for c in caps]
        return [float(np.mean(caps)) * 1e6] * n

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict; inverse of :meth:`from_dict`."""
        out = run_to_dict(self)
        out["reduce"] = {k: json_float(v) for k, v in dataclasses.asdict(self.reduce).items()}
        out["link_caps_mb_s"] = list(self.link_caps_mb_s)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReduceRunConfig:
        """Rebuild from :meth:`to_dict`'s output (unknown keys raise)."""
        kwargs = run_kwargs(cls, data, "reduce")
        if isinstance(kwargs.get("reduce"), dict):
            knobs = {k: unjson_float(v) for k, v in kwargs["reduce"].items()}
            kwargs["reduce"] = ReduceParams(**knobs)
        if "link_caps_mb_s" in kwargs:
            kwargs["link_caps_mb_s"] = tuple(kwargs["link_caps_mb_s"])
        return cls(**kwargs)

"""Rank entry steps shared by the families without a parameter server (every rank a worker).

The all-reduce family (:mod:`..reduce.rank`) and the DS-Sync family (:mod:`..dssync.rank`) join
and leave the job the same way and differ only in what a rank plays in between:

* :func:`run_peer_rank` coerces and re-validates the run config, reads ``RANK`` /
  ``WORLD_SIZE`` / ``LOCAL_RANK``, arms the watchdog, joins the gloo world, plays, and always
  destroys the process group;
* :func:`initial_flat` builds the seeded model every rank starts from;
* :func:`open_run` has rank 0 create the run directory and publish the run's epoch (the
  telemetry clock's zero) through the store; the others wait for it;
* leaving is :func:`fl_r2sp.cluster.runtime.common.job.leave`, as in the PS family.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import torch
import torch.distributed as dist
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.common import run_dir as R
from fl_r2sp.cluster.runtime.common.job import WATCHDOG_GRACE_S, env_int, local_rank_of, watchdog
from fl_r2sp.cluster.userjob.job import TrainingJob


class PeerRunConfig(Protocol):
    """What the shared steps read from a serverless family's run config."""

    @property
    def base(self) -> ClusterConfig: ...

    @property
    def world_size(self) -> int: ...

    @property
    def run_timeout_s(self) -> float: ...

    def validate(self, check_model: bool = True) -> Any: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any: ...


C = TypeVar("C", bound=PeerRunConfig)


def run_peer_rank(
    config: object,
    kind: type[C],
    play: Callable[[C, int, int], dict[str, Any] | None],
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
) -> dict[str, Any] | None:
    """Join the gloo world, run ``play(cfg, rank, local_rank)``, leave the world.

    Parameters
    ----------
    config : object
        A ``kind`` or its dict (``kind.from_dict`` rebuilds it); validated here without the
        model check (the launcher did that).
    kind : type
        The family's run config class.
    play : callable
        This rank's part of the run; its return value is returned.
    init_method : str or None, default None
        ``torch.distributed`` init method (None: ``env://``).
    rank, world_size, local_rank : int or None, default None
        Default to ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (0) from the environment.

    Raises
    ------
    TypeError
        If ``config`` is neither a ``kind`` nor a dict.
    ValueError
        If ``WORLD_SIZE`` differs from the run's number of workers.
    """
    if isinstance(config, dict):
        config = kind.from_dict(config)
    if not isinstance(config, kind):
        raise TypeError(f"expected a {kind.__name__} or its dict, got {type(config).__name__}")
    cfg = config
    cfg.validate(check_model=False)
    rank = env_int("RANK", rank)
    world_size = env_int("WORLD_SIZE", world_size)
    local_rank = local_rank_of(local_rank)
    if world_size != cfg.world_size:
        raise ValueError(f"WORLD_SIZE={world_size} but the run has {cfg.world_size} workers")
    torch.set_num_threads(cfg.base.threads)
    timer = watchdog(rank, cfg.run_timeout_s + WATCHDOG_GRACE_S)
    dist.init_process_group("gloo", init_method=init_method or "env://", rank=rank,
                            world_size=world_size,
                            timeout=datetime.timedelta(seconds=cfg.base.timeout_s))  # fmt: skip
    try:
        return play(cfg, rank, local_rank)
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):  # a peer may already be gone
            dist.destroy_process_group()


def initial_flat(base: ClusterConfig) -> torch.Tensor:
    """The seeded model's trainable parameters, flattened (the same on every rank)."""
    model = TrainingJob(base).build_model()
    return nn.utils.parameters_to_vector(
        [p for p in model.parameters() if p.requires_grad]).detach().clone()  # fmt: skip


def open_run(
    store: Any, base: ClusterConfig, scheme: str, rank: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """:func:`fl_r2sp.cluster.runtime.common.run_dir.open_run` for a serverless run: every rank
    is worker ``rank`` (rank 0 also leads); the folder is
    ``<scheme>-<model>-<dataset>-w<workers>-seed<seed>-<local time>`` under ``base.run_dir``.
    Returns the published ``{"epoch", "run_dir", **extra}``."""
    name = R.run_name(scheme, f"w{base.workers}", base)
    role = {"role": "worker", "worker": rank}
    return R.open_run(store, rank, base.workers, role, base.run_dir, name, base.timeout_s, extra)

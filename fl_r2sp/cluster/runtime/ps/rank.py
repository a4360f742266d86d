"""Entry of one rank of a parameter-server run: join the job, build the shared state, play.

:func:`run_ps_rank` is the rank entry of every parameter-server scheme's row in the scheme
table (:mod:`fl_r2sp.cluster.schemes`), with the family's play function bound: :func:`play_ps`
(the runtime's PS, coordinator and Algorithm 1 worker: BSP, ASP, SSP, R²SP, SAFA) or OSP's
:func:`~fl_r2sp.cluster.runtime.osp.rank.play_osp`. Both play on the same shared state: the
seeded model's flattened parameters, the shard bounds, the run directory and its epoch
(published by rank 0 through the store), and the scheme's coordinator policy.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.distributed_c10d import Store

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.common.base import CoordinatorPolicy
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, set_json
from fl_r2sp.cluster.runtime.common.job import (
    WATCHDOG_GRACE_S,
    env_int,
    leave,
    local_rank_of,
    watchdog,
)
from fl_r2sp.cluster.runtime.common.run_dir import open_run, run_name
from fl_r2sp.cluster.runtime.ps.leader import run_leader, run_other_server
from fl_r2sp.cluster.runtime.ps.worker import Worker
from fl_r2sp.cluster.userjob.job import TrainingJob

#: A family's part of a PS run: ``play(ctx, policy, flat, model) -> summary (rank 0) or None``.
Play = Callable[[RankContext, CoordinatorPolicy, torch.Tensor, nn.Module], "dict[str, Any] | None"]


def run_ps_rank(
    config: ClusterConfig,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
    *,
    play: Play,
) -> dict[str, Any] | None:
    """Run one rank of a parameter-server run; rank 0 returns the run summary, the others None.

    Parameters
    ----------
    config : ClusterConfig
        The run configuration; validated again here (a torchrun launch skips the launcher).
    init_method : str or None, default None
        ``torch.distributed`` init method (None: ``env://``, as set by torchrun/elastic).
    rank, world_size, local_rank : int or None
        Default to ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (0) from the environment.
    play : callable
        The family's play function (:data:`Play`).

    Raises
    ------
    ValueError
        If ``WORLD_SIZE`` differs from the run's world (S + N; OSP-C: N).
    """
    cfg = config.validate(check_model=False)
    rank = env_int("RANK", rank)
    world_size = env_int("WORLD_SIZE", world_size)
    local_rank = local_rank_of(local_rank)
    if world_size != cfg.world_size:
        raise ValueError(f"WORLD_SIZE={world_size} but the run of {cfg.scheme_name} has "
                         f"{cfg.world_size} ranks")  # fmt: skip
    torch.set_num_threads(cfg.threads)
    timer = watchdog(rank, cfg.run_timeout_s + WATCHDOG_GRACE_S)
    dist.init_process_group("gloo", init_method=init_method or "env://", rank=rank,
                            world_size=world_size,
                            timeout=datetime.timedelta(seconds=cfg.timeout_s))  # fmt: skip
    try:
        return _join_and_play(cfg, rank, world_size, local_rank, play)
    finally:
        timer.cancel()
        # A peer may already be gone; the process is ending anyway.
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


def _join_and_play(
    cfg: ClusterConfig, rank: int, world_size: int, local_rank: int, play: Play
) -> dict[str, Any] | None:
    """Build the shared state (initial parameters, shards, epoch) and run this rank's role."""
    model = TrainingJob(cfg).build_model()
    flat = nn.utils.parameters_to_vector(
        [p for p in model.parameters() if p.requires_grad]).detach().clone()  # fmt: skip
    bounds = P.shard_bounds(flat.numel(), cfg.servers)
    store = new_store()
    name = run_name(cfg.scheme_name, f"w{cfg.workers}s{cfg.servers}", cfg)
    info = open_run(store, rank, world_size, role_of(cfg, rank), cfg.run_dir, name, cfg.timeout_s)
    ctx = RankContext(cfg, rank, world_size, local_rank, bounds, flat.numel(),
                      float(info["epoch"]), str(info["run_dir"]))  # fmt: skip
    policy = cfg.scheme.policy(cfg.workers, cfg.batch_size)
    gone: set[int] = set()
    try:
        summary = play(ctx, policy, flat, model)
        if summary is not None:
            gone = {ctx.rank_of(int(w)) for w in summary["lost_workers"]}
            gone |= set(summary["lost_servers"])
        return summary
    except Exception as exc:
        _report_fatal(store, ctx, exc)
        raise
    finally:
        leave(store, ctx.rank, ctx.world_size, gone)


def role_of(cfg: ClusterConfig, rank: int) -> dict[str, Any]:
    """``rank``'s roster entry: ``{"role": "ps"}`` for ranks below S, ``{"role": "worker",
    "worker": w}`` after them; OSP-C's ranks below S host shard and worker (``"ps+worker"``)."""
    servers = 0 if cfg.scheme.colocated else cfg.servers
    if rank < servers:
        return {"role": "ps"}
    role = "ps+worker" if rank < cfg.servers else "worker"
    return {"role": role, "worker": rank - servers}


def play_ps(
    ctx: RankContext, policy: CoordinatorPolicy, flat: torch.Tensor, model: nn.Module
) -> dict[str, Any] | None:
    """The runtime's roles: rank 0 is PS 0 and the coordinator, then the other PS, then the
    workers (Algorithm 1). Rank 0 returns the summary."""
    if ctx.rank == 0:
        return run_leader(ctx, policy, flat)
    if ctx.is_server:
        run_other_server(ctx, flat, policy.apply_mode, policy.admission)
    else:
        Worker(ctx, barrier=policy.apply_mode == "barrier").run()
    return None


def _report_fatal(store: Store, ctx: RankContext, exc: BaseException) -> None:
    try:
        message = f"{ctx.describe(ctx.rank)} failed: {type(exc).__name__}: {exc}"
        set_json(store, P.FATAL_KEY, {"rank": ctx.rank, "message": message})
    except Exception:  # the store itself may be what failed
        pass

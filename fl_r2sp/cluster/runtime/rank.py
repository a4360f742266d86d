"""Entry point of one rank: join the job, take a role, leave cleanly.

Two ways in:

* :func:`run_rank` is the function the in-process launcher hands to torch's elastic agent
  (``python -m fl_r2sp.cluster``); tests also call it in plain processes with an explicit
  ``init_method``.
* ``torchrun --nnodes ... --nproc-per-node ... --rdzv-backend c10d --rdzv-endpoint HOST:PORT
  -m fl_r2sp.cluster.runtime.rank <the same flags as python -m fl_r2sp.cluster>`` runs
  :func:`main` on every rank of a multi-machine job; ``RANK``, ``WORLD_SIZE`` and
  ``LOCAL_RANK`` come from the environment and WORLD_SIZE must equal servers + workers.

Every rank arms a watchdog that ends the process ``WATCHDOG_GRACE_S`` after
``run_timeout_s`` whatever it is doing, so no rank can outlive the run's time limit.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from fl_r2sp.cluster.config import ClusterConfig, num_classes_of
from fl_r2sp.cluster.models import build_model
from fl_r2sp.cluster.policies import make_policy
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, set_json, wait_get

WATCHDOG_GRACE_S = 60.0
EXIT_WAIT_S = 10.0


def _watchdog(rank: int, limit_s: float) -> threading.Timer:
    def expire() -> None:
        print(f"[rank {rank}] run exceeded its time limit ({limit_s:.0f}s); exiting", flush=True,
              file=sys.stderr)  # fmt: skip
        os._exit(124)

    timer = threading.Timer(limit_s, expire)
    timer.daemon = True
    timer.start()
    return timer


def _env_int(name: str, given: int | None) -> int:
    if given is not None:
        return given
    if name not in os.environ:
        raise RuntimeError(f"{name} is not set: start ranks with torchrun or python -m "
                           "fl_r2sp.cluster")  # fmt: skip
    return int(os.environ[name])


def run_rank(
    config: ClusterConfig | dict[str, Any],
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
) -> dict[str, Any] | None:
    """Run one rank of the job; rank 0 returns the run summary, the others None.

    Parameters
    ----------
    config : ClusterConfig or dict
        The run configuration (a dict from :meth:`ClusterConfig.to_dict` crosses process
        boundaries); validated again here. An all-reduce-family run (a
        :class:`~fl_r2sp.cluster.runtime.reduce.config.ReduceRunConfig` or its dict) goes to
        :func:`~fl_r2sp.cluster.runtime.reduce.rank.run_reduce_rank`.
    init_method : str or None, default None
        ``torch.distributed`` init method (None: ``env://``, as set by torchrun/elastic).
    rank, world_size, local_rank : int or None
        Default to ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (0) from the environment.
    """
    from fl_r2sp.cluster.runtime.reduce.config import is_reduce_run

    if is_reduce_run(config):  # all reduce / partial / selective: no parameter server
        from fl_r2sp.cluster.runtime.reduce.rank import run_reduce_rank

        return run_reduce_rank(config, init_method, rank, world_size, local_rank)
    from fl_r2sp.cluster.runtime.dssync.config import is_dssync_run

    if is_dssync_run(config):  # DS-Sync, hierarchical all-reduce, gossip: no parameter server
        from fl_r2sp.cluster.runtime.dssync.rank import run_dssync_rank

        return run_dssync_rank(config, init_method, rank, world_size, local_rank)
    cfg = config if isinstance(config, ClusterConfig) else ClusterConfig.from_dict(config)
    cfg.validate(check_model=False)
    rank = _env_int("RANK", rank)
    world_size = _env_int("WORLD_SIZE", world_size)
    local_rank = local_rank if local_rank is not None else int(os.environ.get("LOCAL_RANK", 0))
    if world_size != cfg.world_size:
        raise ValueError(f"WORLD_SIZE={world_size} but servers + workers = {cfg.world_size}")
    torch.set_num_threads(cfg.threads)
    timer = _watchdog(rank, cfg.run_timeout_s + WATCHDOG_GRACE_S)
    dist.init_process_group("gloo", init_method=init_method or "env://", rank=rank,
                            world_size=world_size,
                            timeout=datetime.timedelta(seconds=cfg.timeout_s))  # fmt: skip
    try:
        return _play(cfg, rank, world_size, local_rank)
    finally:
        timer.cancel()
        # A peer may already be gone; the process is ending anyway.
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


def _play(cfg: ClusterConfig, rank: int, world_size: int, local_rank: int) -> dict[str, Any] | None:
    """Build the shared state (initial parameters, shards, epoch) and run this rank's role."""
    model = build_model(cfg.model, num_classes_of(cfg.dataset), cfg.seed)
    flat = nn.utils.parameters_to_vector(
        [p for p in model.parameters() if p.requires_grad]).detach().clone()  # fmt: skip
    bounds = P.shard_bounds(flat.numel(), cfg.servers)
    store = new_store()
    if rank == 0:
        from fl_r2sp.cluster.runtime.ps.leader import make_run_dir, run_name

        run_dir = make_run_dir(cfg.run_dir, run_name(cfg))
        info: dict[str, Any] = {"epoch": time.time(), "run_dir": str(run_dir)}
        set_json(store, P.EPOCH_KEY, info)
    else:
        info = wait_get(store, P.EPOCH_KEY, cfg.timeout_s, delete=False)
    ctx = RankContext(cfg, rank, world_size, local_rank, bounds, flat.numel(),
                      float(info["epoch"]), str(info["run_dir"]))  # fmt: skip
    policy = make_policy(cfg.scheme, cfg.workers, cfg.batch_size)
    gone: set[int] = set()
    try:
        from fl_r2sp.cluster.runtime.osp.rank import is_osp, play_osp, worker_rank_of

        if is_osp(cfg):  # OSP-S / OSP-C: their own shard server and worker loop
            summary = play_osp(ctx, policy, flat, model)
            if summary is not None:
                rank_of = worker_rank_of(cfg)
                gone = {rank_of(int(w)) for w in summary["lost_workers"]}
                gone |= set(summary["lost_servers"])
            return summary
        if rank == 0:
            from fl_r2sp.cluster.runtime.ps.leader import run_leader

            summary = run_leader(ctx, policy, flat)
            gone = {P.worker_rank(int(w), cfg.servers) for w in summary["lost_workers"]}
            gone |= set(summary["lost_servers"])
            return summary
        if ctx.is_server:
            from fl_r2sp.cluster.runtime.ps.leader import run_other_server

            run_other_server(ctx, flat, policy.apply_mode, policy.admission)
        else:
            from fl_r2sp.cluster.runtime.ps.worker import Worker

            Worker(ctx, barrier=policy.apply_mode == "barrier").run()
        return None
    except Exception as exc:
        _report_fatal(store, ctx, exc)
        raise
    finally:
        _leave(store, ctx, gone)


def _report_fatal(store: dist.Store, ctx: RankContext, exc: BaseException) -> None:
    try:
        message = f"{ctx.describe(ctx.rank)} failed: {type(exc).__name__}: {exc}"
        set_json(store, P.FATAL_KEY, {"rank": ctx.rank, "message": message})
    except Exception:  # the store itself may be what failed
        pass


def _leave(store: dist.Store, ctx: RankContext, gone: set[int]) -> None:
    """Mark this rank as leaving; rank 0 (which may host the store) waits for the live others."""
    try:
        store.set(P.exit_key(ctx.rank), "1")
        if ctx.rank == 0:
            keys = [P.exit_key(r) for r in range(1, ctx.world_size) if r not in gone]
            store.wait(keys, datetime.timedelta(seconds=EXIT_WAIT_S))
    except Exception:  # a lost rank never sets its key; leaving anyway is the point
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """``torchrun ... -m fl_r2sp.cluster.runtime.rank <flags>``: run this rank from the env."""
    from fl_r2sp.cluster.runtime.cli import config_from_args

    cfg = config_from_args(argv)
    summary = run_rank(cfg.to_dict())  # a dict of any family: run_rank dispatches on it
    if summary is not None:
        print(json.dumps(summary, indent=2, default=str), flush=True)
        return 0 if summary.get("status") == "ok" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The roles of an OSP run on the PS runtime: OSP-S (standalone PS) and OSP-C (co-located).

* ``osp`` / ``osp-s``: the runtime's usual layout, S parameter-server ranks then N worker ranks
  (:func:`fl_r2sp.cluster.runtime.common.protocol.worker_rank`); every worker reaches every
  shard over gloo.
* ``osp-c``: N ranks only; rank s < S hosts shard s **and** worker s in one process (the PS
  threads, PS 0's coordinator and GIB thread beside the worker's compute), so the co-located
  worker's exchanges with its own shard stay in process (they do not cross the PS link) and its
  compute shares the process with the PS work: the paper's OSP-C overhead. Worker w is rank w.

Rank 0 is always the leader (:func:`fl_r2sp.cluster.runtime.ps.leader.run_leader` with an
:class:`~fl_r2sp.cluster.runtime.osp.server.OSPServer`); OSP needs momentum 0 (LGP applies
``-lr·g`` on the worker), which :meth:`OSPParams.check_job` enforces.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.data import SYNTHETIC_TRAIN
from fl_r2sp.cluster.policies.common.base import CoordinatorPolicy
from fl_r2sp.cluster.policies.osp.params import OSPParams
from fl_r2sp.cluster.runtime.common import names
from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import RankContext, new_store, set_json
from fl_r2sp.cluster.runtime.osp.gib import GibPlanner
from fl_r2sp.cluster.runtime.osp.layout import LayerLayout
from fl_r2sp.cluster.runtime.osp.server import OSPServer
from fl_r2sp.cluster.runtime.osp.worker import OSPWorker
from fl_r2sp.cluster.runtime.ps.leader import run_leader

#: Training-set sizes behind the automatic epoch length (``OSPParams.epoch_iterations = 0``).
TRAIN_SIZES = {
    "synthetic": SYNTHETIC_TRAIN,
    "cifar10": 50_000,
    "copy": 2 * SYNTHETIC_TRAIN,
    "reverse": 2 * SYNTHETIC_TRAIN,
}


def osp_params(cfg: ClusterConfig) -> OSPParams:
    """``cfg``'s scheme record, which an OSP run's roles read.

    Raises
    ------
    TypeError
        If ``cfg`` does not run an OSP variant.
    """
    if not isinstance(cfg.scheme, OSPParams):
        raise TypeError(f"an OSP role needs OSPParams, got {type(cfg.scheme).__name__}")
    return cfg.scheme


def epoch_iterations(cfg: ClusterConfig) -> int:
    """Iterations per epoch of Algorithm 1: the knob, or one pass of N workers' batches."""
    if osp_params(cfg).epoch_iterations:
        return osp_params(cfg).epoch_iterations
    size = TRAIN_SIZES.get(cfg.dataset) or train_size(cfg)
    size = min(size, cfg.max_train) if cfg.max_train else size
    return max(1, size // (cfg.workers * cfg.batch_size))


def train_size(cfg: ClusterConfig) -> int:
    """The number of examples of a user's map-style dataset (worker 0's).

    Raises
    ------
    ValueError
        For an iterable dataset, whose length is unknown: give ``--osp-epoch-iterations``.
    """
    from fl_r2sp.cluster.userjob.batches import is_map_style
    from fl_r2sp.cluster.userjob.job import TrainingJob

    data = TrainingJob(cfg).train_data(0)
    if not is_map_style(data):
        raise ValueError(f"dataset {cfg.dataset!r} is iterable, so OSP cannot tell its epoch: "
                         "give --osp-epoch-iterations")  # fmt: skip
    return len(data)


def worker_rank_of(cfg: ClusterConfig) -> Any:
    """``w -> rank`` of the layout (see the module docstring)."""
    return lambda w: names.rank_of_worker(w, cfg.world_size, cfg.workers)


def make_server(
    ctx: RankContext, init_flat: torch.Tensor, model: torch.nn.Module, on_lost: Any = None
) -> OSPServer:
    """This rank's shard server (PS 0 with the GIB planner)."""
    cfg = ctx.cfg
    layout = LayerLayout.of_model(model, ctx.bounds)
    planner = None
    if ctx.rank == 0:
        planner = GibPlanner(
            osp_params(cfg),
            layout.layer_bytes,
            cfg.workers,
            epoch_iterations(cfg),
            cfg.server_bandwidth_mb_s,
            cfg.seed,
        )
    remote = [w for w in range(cfg.workers) if not (cfg.scheme.colocated and w == ctx.rank)]
    return OSPServer(ctx, init_flat, layout, remote, worker_rank_of(cfg), on_lost, planner)


def play_osp(
    ctx: RankContext, policy: CoordinatorPolicy, flat: torch.Tensor, model: torch.nn.Module
) -> dict[str, Any] | None:
    """Run this rank's OSP role(s); rank 0 returns the summary."""
    hosts_worker = not ctx.is_server or ctx.cfg.scheme.colocated
    if not ctx.is_server:
        worker = ctx.rank if ctx.cfg.scheme.colocated else ctx.rank - ctx.cfg.servers
        OSPWorker(ctx, worker, lgp=osp_params(ctx.cfg).lgp).run()
        return None
    server_box: list[OSPServer] = []

    def build(c: RankContext, f: torch.Tensor, lost: Any) -> OSPServer:
        server_box.append(make_server(c, f, model, lost))
        return server_box[0]

    if ctx.rank == 0:
        if not hosts_worker:
            return run_leader(ctx, policy, flat, make_server=build)
        return _with_local_worker(
            ctx, lambda: run_leader(ctx, policy, flat, make_server=build), server_box
        )
    server = build(ctx, flat, None)
    if hosts_worker:
        _with_local_worker(ctx, lambda: _serve_until_done(server), server_box)
    else:
        _serve_until_done(server)
    return None


def _serve_until_done(server: OSPServer) -> None:
    server.start()
    server.join()
    set_json(new_store(), P.ps_report_key(server.index), server.report())
    dist.send(server.state.snapshot(), dst=0, tag=P.TAG_FINAL)


def _with_local_worker(
    ctx: RankContext, serve: Callable[[], dict[str, Any] | None], box: list[OSPServer]
) -> dict[str, Any] | None:
    """OSP-C: run worker ``ctx.rank`` in a thread beside ``serve`` (which builds the server)."""
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(int(ctx.cfg.timeout_s * 20)):  # the server is built by serve()
            if box:
                break
            threading.Event().wait(0.05)
        try:
            OSPWorker(ctx, ctx.rank, {ctx.rank: box[0]}, osp_params(ctx.cfg).lgp).run()
        except BaseException as exc:  # reported through the fatal key by run()'s callers
            errors.append(exc)
            set_json(new_store(), P.FATAL_KEY, {"rank": ctx.rank, "message": str(exc)})

    t = threading.Thread(target=work, name=f"colocated-worker-{ctx.rank}", daemon=True)
    t.start()
    result = serve()
    t.join(ctx.cfg.timeout_s + 30.0)
    return result

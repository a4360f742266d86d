"""The run folder: its name, its creation by rank 0, and ``run.json``'s roster of ranks.

Every family's rank entry opens the run the same way (:func:`open_run`): each rank announces
its role, pid and host through the store; rank 0 creates the run folder (or takes the one the
one-command launcher made and named in :data:`RUN_DIR_ENV`), waits for every announcement and
writes ``run.json`` with ``"ranks": [{"rank", "role", "pid", "host", ...}, ...]`` and
``"summary": {"status": "running"}`` **before the first iteration**, so an operator (or a
test) can find, watch or stop one rank while the run is going; then it publishes the run's
epoch (the telemetry clock's zero) and folder, for which the other ranks wait.
:class:`~fl_r2sp.cluster.telemetry.ClusterRunWriter` keeps the roster when it rewrites
``run.json`` at the end.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from torch.distributed.distributed_c10d import Store

from fl_r2sp.cluster.runtime.common import protocol as P
from fl_r2sp.cluster.runtime.common.context import set_json, wait_get
from fl_r2sp.cluster.userjob.catalog import short_name

#: Environment variable naming the run folder the launcher already created (unset under
#: torchrun: rank 0 then creates one under the config's ``run_dir``).
RUN_DIR_ENV = "FL_R2SP_CLUSTER_RUN_DIR"


def make_run_dir(parent: str, name: str) -> Path:
    """Create ``parent/name`` (``name-2``, ``name-3``, ... if taken) and return it."""
    base = Path(parent)
    base.mkdir(parents=True, exist_ok=True)
    for i in range(1, 1000):
        path = base / (name if i == 1 else f"{name}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free run directory name {name!r} under {base}")


def run_name(scheme: str, sizes: str, cfg: Any) -> str:
    """Default run folder name ``<scheme>-<model>-<dataset>-<sizes>-seed<seed>-<local time>``.

    ``cfg`` is the shared :class:`~fl_r2sp.cluster.config.ClusterConfig` (an import path
    contributes its attribute: ``pkg.job:net`` gives ``net``); ``sizes`` is e.g. ``"w4s1"``
    for a PS run, ``"w4"`` for a serverless one.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    model, dataset = short_name(cfg.model), short_name(cfg.dataset)  # a path's factory name
    return f"{scheme}-{model}-{dataset}-{sizes}-seed{cfg.seed}-{stamp}"


def open_run(
    store: Store,
    rank: int,
    world: int,
    role: dict[str, Any],
    parent: str,
    name: str,
    timeout_s: float,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Announce this rank; rank 0 creates the folder, writes the roster and publishes
    ``{"epoch", "run_dir", **extra}``; every rank returns that dict.

    Parameters
    ----------
    store : Store
        A client of the job's store.
    rank, world : int
        This rank and the number of ranks.
    role : dict
        This rank's entry in the roster besides rank, pid and host, e.g. ``{"role": "ps"}``
        or ``{"role": "worker", "worker": 2}``.
    parent, name : str
        Where rank 0 creates the folder (``parent/name``) when :data:`RUN_DIR_ENV` is unset.
    timeout_s : float
        How long rank 0 waits for the announcements and the others for the epoch.
    extra : dict or None, default None
        More entries published beside the epoch.

    Raises
    ------
    TimeoutError
        If a rank never announced itself (rank 0) or no epoch came (the others).
    """
    entry = {"rank": rank, **role, "pid": os.getpid(), "host": socket.gethostname()}
    set_json(store, P.rank_key(rank), entry)
    if rank != 0:
        return wait_get(store, P.EPOCH_KEY, timeout_s, delete=False)
    given = os.environ.get(RUN_DIR_ENV)
    run_dir = Path(given) if given else make_run_dir(parent, name)
    run_dir.mkdir(parents=True, exist_ok=True)
    ranks = [wait_get(store, P.rank_key(r), timeout_s) for r in range(world)]
    doc = {"ranks": ranks, "summary": {"status": "running"}}
    (run_dir / "run.json").write_text(json.dumps(doc, indent=2) + "\n")
    info: dict[str, Any] = {"epoch": time.time(), "run_dir": str(run_dir), **(extra or {})}
    set_json(store, P.EPOCH_KEY, info)
    return info

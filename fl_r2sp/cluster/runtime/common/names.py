"""Rank and worker numbering of every cluster family, in one place.

A job of ``world_size`` ranks running ``workers`` workers has ``world_size - workers``
dedicated parameter-server ranks, numbered first: rank ``r < S`` is parameter server ``r``
and rank ``S + w`` is worker ``w``. The families without a parameter server (all-reduce,
DS-Sync) and OSP-C (each shard in the process of a worker) have ``S = 0``: worker ``w`` is
rank ``w``. Every message that names a rank (the supervisor's, a lost worker's reason, a
summary's exit codes) goes through :func:`rank_name`, so it names the rank the operator finds
in ``run.json``.
"""

from __future__ import annotations

__all__ = ["dedicated_servers", "rank_name", "rank_of_worker", "worker_of_rank"]


def dedicated_servers(world_size: int, workers: int) -> int:
    """Parameter-server ranks that hold no worker: ``world_size - workers``.

    Raises
    ------
    ValueError
        If ``workers`` exceeds ``world_size`` or is below 1.
    """
    if not 1 <= workers <= world_size:
        raise ValueError(f"{workers} workers do not fit a world of {world_size} ranks")
    return world_size - workers


def rank_of_worker(worker: int, world_size: int, workers: int) -> int:
    """Global rank of worker ``worker``."""
    return dedicated_servers(world_size, workers) + worker


def worker_of_rank(rank: int, world_size: int, workers: int) -> int | None:
    """The worker that rank ``rank`` runs, or None for a dedicated parameter server."""
    servers = dedicated_servers(world_size, workers)
    return None if rank < servers else rank - servers


def rank_name(rank: int, world_size: int, workers: int) -> str:
    """``'worker w (rank r)'`` or ``'parameter server s (rank r)'``."""
    worker = worker_of_rank(rank, world_size, workers)
    if worker is None:
        return f"parameter server {rank} (rank {rank})"
    return f"worker {worker} (rank {rank})"

"""Entry point of one rank: look the run's family up in the scheme table and run its rank entry.

Two ways in:

* :func:`run_rank` is what every rank process of the one-command launcher runs
  (``python -m fl_r2sp.cluster``, :mod:`fl_r2sp.cluster.local`) with an explicit
  ``init_method``.
* ``torchrun --nnodes ... --nproc-per-node ... --rdzv-backend c10d --rdzv-endpoint HOST:PORT
  -m fl_r2sp.cluster.rank <the same flags as python -m fl_r2sp.cluster>`` runs
  :func:`main` on every rank of a multi-machine job; ``RANK``, ``WORLD_SIZE`` and
  ``LOCAL_RANK`` come from the environment, and WORLD_SIZE must equal the run's world size:
  servers + workers for a parameter-server scheme, the workers for ``osp-c`` and for the
  families without a parameter server.

Every family's entry arms a watchdog (:mod:`fl_r2sp.cluster.runtime.common.job`), so no rank
can outlive the run's time limit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from fl_r2sp.cluster.cli import config_from_args
from fl_r2sp.cluster.runtime.common.run_config import ClusterRunConfig
from fl_r2sp.cluster.schemes import family_of


def run_rank(
    config: ClusterRunConfig,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
) -> dict[str, Any] | None:
    """Run one rank of the job; rank 0 returns the run summary, the others None.

    Parameters
    ----------
    config : ClusterRunConfig
        The run configuration of any family; its family in the scheme table
        (:func:`fl_r2sp.cluster.schemes.family_of`) names the rank entry, which validates it
        again (a parameter-server scheme's then plays its row's ``play``).
    init_method : str or None, default None
        ``torch.distributed`` init method (None: ``env://``, as set by torchrun/elastic).
    rank, world_size, local_rank : int or None
        Default to ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (0) from the environment.
    """
    return family_of(config).rank(config, init_method, rank, world_size, local_rank)


def main(argv: Sequence[str] | None = None) -> int:
    """``torchrun ... -m fl_r2sp.cluster.rank <flags>``: run this rank from the env."""
    summary = run_rank(config_from_args(argv))
    if summary is not None:
        print(json.dumps(summary, indent=2, default=str), flush=True)
        return 0 if summary.get("status") == "ok" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

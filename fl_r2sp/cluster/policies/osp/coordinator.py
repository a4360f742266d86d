"""The coordinator side of OSP on the parameter-server runtime: grant at once, end on a loss.

OSP's synchronisation lives in the data plane (:mod:`fl_r2sp.cluster.runtime.osp.server`): the
routine synchronisation (RS) of iteration k is a barrier at every shard, and a worker starts
k + 1 as soon as its RS reply and LGP are done. So the coordinator adds no wait of its own:
every Request-to-Proceed is granted at once (ASP's rule), and the coordinator keeps its other
jobs (telemetry rows, the iteration cap, the convergence stop). ``apply_mode`` is
``"barrier"`` because the RS barrier is BSP's: a lost worker ends the run with an error naming
it (:mod:`fl_r2sp.cluster.runtime.ps.coordinator`), and the shards release every waiting transfer
with an abort, so nothing waits for the dead worker.
"""

from __future__ import annotations

from typing import ClassVar

from fl_r2sp.cluster.policies.common.base import ApplyMode
from fl_r2sp.cluster.policies.ps.asp import PSASPPolicy


class OSPCoordinatorPolicy(PSASPPolicy):
    """Permission for ``k + 1`` at the push of ``k``; a barrier scheme for fault handling.

    Constructed as :class:`~fl_r2sp.cluster.policies.ps.asp.PSASPPolicy` (``num_workers``,
    ``batch_size``); every decision is ASP's, only :attr:`apply_mode` differs.
    """

    name: ClassVar[str] = "osp"
    apply_mode: ClassVar[ApplyMode] = "barrier"


class OSPSCoordinatorPolicy(OSPCoordinatorPolicy):
    """OSP-S (standalone PS): the same decisions, named after the scheme."""

    name: ClassVar[str] = "osp-s"


class OSPCCoordinatorPolicy(OSPCoordinatorPolicy):
    """OSP-C (PS co-located with a worker): the same decisions, named after the scheme."""

    name: ClassVar[str] = "osp-c"


#: Coordinator policy class per OSP scheme name.
OSP_POLICIES: dict[str, type[OSPCoordinatorPolicy]] = {
    "osp": OSPCoordinatorPolicy, "osp-s": OSPSCoordinatorPolicy, "osp-c": OSPCCoordinatorPolicy,
}  # fmt: skip

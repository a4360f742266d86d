"""Virtual-time twin of the cluster mode: the same coordinator policies over a fluid network.

``simulate(TwinSpec(...)) -> TwinResult`` runs N workers and S parameter-server shards on
:mod:`fl_r2sp.emulation` (links shared max-min fairly, virtual clock, seeded jitter). It gives
hardware efficiency only (iteration times, blocking, inter-update gaps): nothing is trained.
"""

from __future__ import annotations

from fl_r2sp.cluster.sim.ps.engine import Twin, simulate
from fl_r2sp.cluster.sim.ps.replay import replay
from fl_r2sp.cluster.sim.ps.result import ROW_FIELDS, ZERO_GAP_S, TwinResult
from fl_r2sp.cluster.sim.ps.spec import TwinSpec

__all__ = ["ROW_FIELDS", "ZERO_GAP_S", "Twin", "TwinResult", "TwinSpec", "replay", "simulate"]

"""ASP: no coordination; every Request-to-Proceed is granted at once.

The PS applies each push as it arrives (:attr:`apply_mode` ``"immediate"``) and the worker
pulls the latest parameters straight away. A lost worker changes nothing for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fl_r2sp.cluster.policies.common.base import ApplyMode, Permission, PushReport
from fl_r2sp.cluster.policies.common.params import KnoblessParams
from fl_r2sp.cluster.policies.common.trace import TracedPolicy


class PSASPPolicy(TracedPolicy):
    """Asynchronous parallel coordinator: permission for ``k + 1`` at the push of ``k``.

    Parameters
    ----------
    num_workers : int
        N >= 1.
    batch_size : int
        Batch size of every worker (>= 1).
    """

    name: ClassVar[str] = "asp"
    apply_mode: ClassVar[ApplyMode] = "immediate"

    def on_push(self, report: PushReport) -> list[Permission]:
        """Grant the reporting worker its next iteration at ``report.now``."""
        if not self.check_report(report):
            return []
        return [self.grant(report.worker, report.iteration + 1, report.now)]


@dataclass(frozen=True, kw_only=True)
class ASPParams(KnoblessParams):
    """ASP's record (asynchronous parallel): its name only."""

    scheme: str = "asp"
    policy_class: ClassVar[type[TracedPolicy]] = PSASPPolicy

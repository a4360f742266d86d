"""The scheme table: a new parameter-server scheme is its record, its policy and one row.

The toy scheme below is defined here and nowhere else: it reaches the command line (its flag
and its record) and the virtual-time twin through its row alone.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import ClassVar, Self

import pytest

from fl_r2sp.cluster.cli import build_parser, parse
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.common.base import ApplyMode, Permission, PushReport
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.policies.common.trace import TracedPolicy
from fl_r2sp.cluster.schemes import CLUSTER_SCHEMES, PS_FAMILY, names_of, ps_row, scheme
from fl_r2sp.cluster.sim import TwinSpec

TINY = ["--model", "mlp", "--dataset", "synthetic"]


class HoldPolicy(TracedPolicy):
    """ASP, but every next iteration is granted ``hold_s`` after the push."""

    name: ClassVar[str] = "toy"
    apply_mode: ClassVar[ApplyMode] = "immediate"

    def __init__(self, num_workers: int, batch_size: int, hold_s: float) -> None:
        super().__init__(num_workers, batch_size)
        self.hold_s = hold_s

    def on_push(self, report: PushReport) -> list[Permission]:
        if not self.check_report(report):
            return []
        return [self.grant(report.worker, report.iteration + 1, report.now + self.hold_s)]


@dataclass(frozen=True, kw_only=True)
class HoldParams(PSParams):
    scheme: str = "toy"
    hold_s: float = 0.5

    def check(self) -> None:
        if not self.hold_s >= 0:
            raise ValueError(f"toy_hold must be >= 0, got {self.hold_s!r}")

    def make(self, num_workers: int, batch_size: int) -> HoldPolicy:
        return HoldPolicy(num_workers, batch_size, self.hold_s)

    @classmethod
    def add_flags(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--toy-hold", type=float, default=cls().hold_s)

    @classmethod
    def from_flags(cls, scheme: str, ns: argparse.Namespace) -> Self:
        return cls(scheme=scheme, hold_s=ns.toy_hold)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CLUSTER_SCHEMES, "toy", ps_row("toy", HoldParams))


@pytest.mark.usefixtures("toy")
def test_a_toy_ps_scheme_runs_from_its_row_alone() -> None:
    assert "--toy-hold" in build_parser().format_help() and "toy" in names_of(PS_FAMILY)
    cfg, _ = parse(["--scheme", "toy", "--toy-hold", "0.25", "--workers", "2", *TINY])
    assert isinstance(cfg, ClusterConfig) and cfg.scheme == HoldParams(hold_s=0.25)
    assert cfg.world_size == 3  # one PS + two workers, as every PS scheme
    spec = TwinSpec(
        params=cfg.scheme,
        num_workers=2,
        num_servers=1,
        model_bytes=1e6,
        batch_size=10,
        iterations=3,
        speeds=(100.0,),
        server_bandwidth=1e8,
    )
    result = scheme("toy").twin(spec)
    grants = [e for e in result.trace if e["event"] == "permission" and e["iteration"] > 0]
    pushes = {(r["worker"], r["iteration"]): r["t_end"] for r in result.rows}
    assert len(grants) == 6  # iterations 1, 2 and 3 (granted at the last push) of both workers
    for g in grants:
        assert g["at"] == pytest.approx(pushes[(g["worker"], g["iteration"] - 1)] + 0.25)
    with pytest.raises(ValueError, match="toy_hold"):
        scheme("toy").twin(TwinSpec(**{**vars(spec), "params": HoldParams(hold_s=-1.0)}))


def test_every_ps_row_names_its_record_and_the_record_its_scheme() -> None:
    for name, row in CLUSTER_SCHEMES.items():
        record = row.ps_params
        if record is not None:
            assert record(scheme=name).validate().policy(2, 4).name == name

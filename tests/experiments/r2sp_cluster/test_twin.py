"""The twin's item setups (no simulation run)."""

from __future__ import annotations

from experiments.r2sp_cluster.twin.fig14 import FIG14_SCHEMES, transformer_spec


def test_every_fig14_scheme_builds_its_spec_and_only_r2sp_tunes() -> None:
    specs = {(s, t): transformer_spec(s, t) for s, t in FIG14_SCHEMES}
    assert specs[("r2sp", "idle")].params.tuning == "idle"  # type: ignore[attr-defined]
    assert specs[("r2sp", "none")].params.tuning == "none"  # type: ignore[attr-defined]
    assert {spec.params.scheme for spec in specs.values()} == {"bsp", "asp", "ssp", "safa", "r2sp"}

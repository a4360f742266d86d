"""Shared pytest setup: the ``e2e``, ``slow`` and ``cuda`` markers, a Flower home cleaned up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fl_r2sp.fl.flower.processes import local_superlink_pids, stop_local_superlink


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "e2e: end-to-end runs through Flower's CLI and processes (run by default; "
        "deselect with -m 'not e2e')",
    )
    config.addinivalue_line(
        "markers",
        "slow: over half a minute on a 2-core CPU, e.g. a torch.compile (run by default; "
        "deselect with -m 'not slow')",
    )
    config.addinivalue_line(
        "markers",
        "cuda: needs a CUDA device, skipped without one (scripts/gpu_checks.sh runs them: -m cuda)",
    )


def stop_and_check(home: Path) -> None:
    """Stop the local SuperLink ``flwr run`` left running for ``home``; fail if any survive."""
    stop_local_superlink(home)
    left = local_superlink_pids(home)
    assert not left, f"processes {left} of the SuperLink in {home} are still running"


@pytest.fixture(scope="module")
def flwr_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty ``FLWR_HOME`` shared by a module's ``flwr run`` calls (one local SuperLink).

    The SuperLink that ``flwr run`` leaves running is stopped, and checked
    gone, after the module.
    """
    home = tmp_path_factory.mktemp("flwr-home")
    yield home
    stop_and_check(home)

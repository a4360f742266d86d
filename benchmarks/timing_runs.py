"""Timing-only federated runs for the benchmarks: the shipped policies through the real runner.

Every benchmark that needs a whole run (the long runs of ``bench_emulation.py``,
``check_paper_ec2.py``) calls :func:`fl_r2sp.fl.server.runner.run` in process with
``timing-only``: the policy, the virtual-time loop and the network are the ones
a user runs; clients echo the model and compute for the profile's seconds per
iteration x tau. Configurations are spelled as Flower run-config keys
(kebab-case), the user-facing contract, so that they survive refactors of
:class:`~fl_r2sp.fl.config.RunConfig`'s Python fields.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

from fl_r2sp.emulation import star_network
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server import runner

#: Evaluation interval that means "never" (timing-only runs have no evaluator anyway).
NO_EVAL = 10**9


def timing_config(
    strategy: str, clients: int, groups: int, rounds: int, network: str, seed: int = 0,
    **keys: Any,
) -> RunConfig:  # fmt: skip
    """Timing-only config of ``strategy`` on the CNN's size (62k float32), tau 100.

    Parameters
    ----------
    strategy : str
        A runner strategy: fl-r2sp, bsp, asp, fedasync or fedbuff.
    clients : int
        Number of clients.
    groups : int
        FL-R²SP groups M (forced to 1 for BSP).
    rounds : int
        Rounds per group: the run stops after ``rounds x M`` global updates.
    network : str
        Network profile (paper-ec2, paper-ec2-fcfs, lan).
    seed : int, default 0
        Run seed (delays).
    **keys
        Other run-config keys, kebab-case (e.g. ``{"fraction": 0.5}``).
    """
    groups = 1 if strategy == "bsp" else groups
    base: dict[str, Any] = {
        "strategy": strategy, "num-partitions": clients, "num-groups": groups, "group-size": 0,
        "dataset": "cifar10", "model": "cnn", "timing-only": True, "local-iterations": 100,
        "network": network, "max-updates": rounds * groups, "eval-every": NO_EVAL,
        "plots": False, "seed": seed,
    }  # fmt: skip
    base.update(keys)
    return RunConfig.from_run_config(base)


@dataclass(frozen=True)
class TimedRun:
    """A run's summary (see :func:`fl_r2sp.telemetry.summary.summarize_run`) and its cost."""

    summary: dict[str, Any]
    cpu_s: float
    wall_s: float


@contextlib.contextmanager
def _engine(fast_path: bool) -> Iterator[None]:
    # The engine is not a run setting (results agree up to float rounding), so the
    # general water-filling solver is selected by swapping the runner's network factory.
    if fast_path:
        yield
        return
    with mock.patch.object(
        runner, "star_network", functools.partial(star_network, fast_path=False)
    ):
        yield


def timed_run(cfg: RunConfig, fast_path: bool = True) -> TimedRun:
    """Run ``cfg`` in process; CPU and wall seconds of the whole call.

    ``fast_path=False`` (default True) runs the network on the general
    water-filling solver instead of the per-link processor-sharing fast path.
    """
    with _engine(fast_path):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        out = runner.run(cfg, write=False, progress=False)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return TimedRun(out.summary, cpu, wall)


def warm_up() -> None:
    """One tiny run, so that imports and first-call caches are not timed afterwards."""
    timed_run(timing_config("fl-r2sp", 4, 2, 1, "paper-ec2"))

"""The one scheme table of the cluster mode: scheme name -> everything that runs it.

Each row (:class:`ClusterScheme`) names a scheme's frozen parameter record class, its family (run
config, rank entry), a PS scheme's play function, its virtual-time twin and its command-line
flags (its family's shared flags, and a PS record's own ``add_flags`` / ``from_flags``); the
policy builder of a parameter-server scheme is its record's
:meth:`~fl_r2sp.cluster.policies.common.params.PSParams.policy`.
The CLI (:mod:`fl_r2sp.cluster.cli`: ``--scheme`` choices, help groups, flag
ownership), the rank entry (:func:`fl_r2sp.cluster.rank.run_rank`) and the config
reader (:attr:`Family.read`) all read :data:`CLUSTER_SCHEMES`; none of them names a scheme.

Adding a parameter-server scheme: its policy and record in ``policies/ps/<scheme>.py`` (the
record subclasses :class:`~fl_r2sp.cluster.policies.common.params.PSParams`), one
:func:`ps_row` here, and its tests. Adding a scheme family: its packages under
``policies/``, ``runtime/`` and ``sim/``, one :class:`Family` (its run config class, rank
entry, shared flags, run-config builder, one-line description, config reader) and one row per
scheme here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.policies.dssync.regroup import DSSyncParams
from fl_r2sp.cluster.policies.osp.params import OSPParams
from fl_r2sp.cluster.policies.ps.asp import ASPParams
from fl_r2sp.cluster.policies.ps.bsp import BSPParams
from fl_r2sp.cluster.policies.ps.r2sp import R2SPParams
from fl_r2sp.cluster.policies.ps.safa import SAFAParams
from fl_r2sp.cluster.policies.ps.ssp import SSPParams
from fl_r2sp.cluster.policies.reduce.params import ReduceParams
from fl_r2sp.cluster.runtime.common.run_config import ClusterRunConfig
from fl_r2sp.cluster.runtime.dssync import cli as dssync_cli
from fl_r2sp.cluster.runtime.dssync.config import DSSyncRunConfig
from fl_r2sp.cluster.runtime.ps import cli as ps_cli
from fl_r2sp.cluster.runtime.reduce import cli as reduce_cli
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig
from fl_r2sp.cluster.sim.dssync.engine import dssync_time, gossip_time, hierarchical_time
from fl_r2sp.cluster.sim.ps.engine import simulate
from fl_r2sp.cluster.sim.reduce.engine import run_reduce_sim
from fl_r2sp.importpath import resolve

if TYPE_CHECKING:
    from fl_r2sp.cluster.runtime.ps.rank import Play

#: ``rank_entry(config, init_method, rank, world_size, local_rank) -> summary (rank 0) or None``.
RankEntry = Callable[..., "dict[str, Any] | None"]


class Deferred:
    """A function named by its import path and imported on its first call.

    The rank entries and play functions import torch; deferring them keeps the table, and so
    the command line's ``--help`` and its refusals, free of torch.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            self._fn = resolve(self.path, "rank entry")
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Deferred({self.path!r})"


_RUNTIME = "fl_r2sp.cluster.runtime"


@dataclass(frozen=True)
class Family:
    """What the schemes of one runtime share: run config, rank entry, command-line flags.

    Attributes
    ----------
    title : str
        Help-group title, also named in the message that refuses a misplaced flag.
    config : type
        The family's run config class (the rank entry finds the family by it).
    rank : callable
        The family's rank entry (:data:`RankEntry`): joins the job and plays the run.
    add_flags : callable
        ``add_flags(group)`` adds the flags every scheme of the family reads.
    build : callable
        ``build(ns, base, given) -> ClusterRunConfig`` (not yet validated): the family's run config
        on the shared ``base`` (whose ``scheme`` holds a PS scheme's record); ``given`` holds
        the dests the user typed; raises ValueError on a bad combination.
    describe : callable
        ``describe(cfg) -> str``: the one-line announcement of the run.
    read : callable
        ``read(data) -> ClusterRunConfig``: the run config from its ``to_dict`` output (a run
        directory's ``config.json``).
    """

    title: str
    config: type
    rank: RankEntry
    add_flags: Callable[[argparse._ArgumentGroup], None]
    build: Callable[[argparse.Namespace, ClusterConfig, frozenset[str]], ClusterRunConfig]
    describe: Callable[[Any], str]
    read: Callable[[dict[str, Any]], ClusterRunConfig]


@dataclass(frozen=True)
class ClusterScheme:
    """One row of the scheme table.

    Attributes
    ----------
    name : str
        The ``--scheme`` value.
    family : Family
        The runtime that runs it (its run config, rank entry and shared flags).
    params : type
        Its frozen parameter record class (a :class:`PSParams` subclass for a
        parameter-server scheme, which also adds the scheme's own flags; the family's record,
        e.g. :class:`ReduceParams`, otherwise).
    twin : callable
        Its virtual-time twin (PS: :func:`~fl_r2sp.cluster.sim.ps.engine.simulate`).
    play : callable or None, default None
        A parameter-server scheme's play function (:data:`~fl_r2sp.cluster.runtime.ps.rank.Play`),
        which the PS family's rank entry runs on every rank; None in a serverless family, whose
        rank entry plays every scheme of the family.
    """

    name: str
    family: Family
    params: type[Any]
    twin: Callable[..., Any]
    play: Play | None = None

    @property
    def ps_params(self) -> type[PSParams] | None:
        """The record class if it is a parameter-server scheme's, else None."""
        return self.params if issubclass(self.params, PSParams) else None


def read_ps_config(data: dict[str, Any]) -> ClusterConfig:
    """A PS run's config from its dict; its ``scheme`` record class comes from the table."""
    return ClusterConfig.from_dict(data, ps_records())


def run_ps_scheme(config: ClusterConfig, *where: Any) -> dict[str, Any] | None:
    """The PS family's rank entry: :func:`run_ps_rank` with the play function of the config's
    scheme row (``where``: init_method, rank, world_size, local_rank)."""
    play = scheme(config.scheme_name).play
    if play is None:
        raise ValueError(f"scheme {config.scheme_name!r} has no parameter-server play function")
    from fl_r2sp.cluster.runtime.ps.rank import run_ps_rank

    return run_ps_rank(config, *where, play=play)


PS_FAMILY = Family(
    "parameter-server",
    ClusterConfig,
    run_ps_scheme,
    ps_cli.add_flags,
    ps_cli.build,
    ps_cli.describe,
    read_ps_config,
)
REDUCE_FAMILY = Family(
    "all-reduce family",
    ReduceRunConfig,
    Deferred(f"{_RUNTIME}.reduce.rank:run_reduce_rank"),
    reduce_cli.add_flags,
    reduce_cli.build,
    reduce_cli.describe,
    ReduceRunConfig.from_dict,
)
DSSYNC_FAMILY = Family(
    "DS-Sync family",
    DSSyncRunConfig,
    Deferred(f"{_RUNTIME}.dssync.rank:run_dssync_rank"),
    dssync_cli.add_flags,
    dssync_cli.build,
    dssync_cli.describe,
    DSSyncRunConfig.from_dict,
)


#: The runtime's PS roles (BSP, ASP, SSP, R²SP, SAFA) and OSP's.
PLAY_PS = Deferred(f"{_RUNTIME}.ps.rank:play_ps")
PLAY_OSP = Deferred(f"{_RUNTIME}.osp.rank:play_osp")


def ps_row(name: str, record: type[PSParams], play: Play = PLAY_PS) -> ClusterScheme:
    """The row of a parameter-server scheme: its record, the PS twin, and ``play`` (default:
    the runtime's PS roles)."""
    return ClusterScheme(name, PS_FAMILY, record, simulate, play)


#: Scheme name -> its row. The first row's family is the CLI's default group.
CLUSTER_SCHEMES: dict[str, ClusterScheme] = {
    "bsp": ps_row("bsp", BSPParams),
    "asp": ps_row("asp", ASPParams),
    "ssp": ps_row("ssp", SSPParams),
    "r2sp": ps_row("r2sp", R2SPParams),
    "safa": ps_row("safa", SAFAParams),
    "osp": ps_row("osp", OSPParams, PLAY_OSP),
    "osp-s": ps_row("osp-s", OSPParams, PLAY_OSP),
    "osp-c": ps_row("osp-c", OSPParams, PLAY_OSP),
    "allreduce": ClusterScheme("allreduce", REDUCE_FAMILY, ReduceParams, run_reduce_sim),
    "partial": ClusterScheme("partial", REDUCE_FAMILY, ReduceParams, run_reduce_sim),
    "selective": ClusterScheme("selective", REDUCE_FAMILY, ReduceParams, run_reduce_sim),
    "dssync": ClusterScheme("dssync", DSSYNC_FAMILY, DSSyncParams, dssync_time),
    "hierarchical": ClusterScheme("hierarchical", DSSYNC_FAMILY, DSSyncParams, hierarchical_time),
    "gossip": ClusterScheme("gossip", DSSYNC_FAMILY, DSSyncParams, gossip_time),
}


def family_of(config: object) -> Family:
    """The family whose run config ``config`` is (a DS-Sync run of its own all-reduce
    baseline, ``DSSyncRunConfig(scheme="allreduce")``, is the DS-Sync family's).

    Raises
    ------
    TypeError
        If no family of the table runs such a config.
    """
    for family in families():
        if isinstance(config, family.config):
            return family
    raise TypeError(f"no scheme family runs a {type(config).__name__}")


def families() -> list[Family]:
    """The families of :data:`CLUSTER_SCHEMES`, in table order, each once."""
    return list(dict.fromkeys(row.family for row in CLUSTER_SCHEMES.values()))


def names_of(family: Family) -> list[str]:
    """The schemes ``family`` runs, in table order."""
    return [name for name, row in CLUSTER_SCHEMES.items() if row.family is family]


def scheme(name: str) -> ClusterScheme:
    """The row of ``name``.

    Raises
    ------
    ValueError
        If no row has that name.
    """
    row = CLUSTER_SCHEMES.get(name)
    if row is None:
        raise ValueError(f"unknown scheme {name!r}; choose one of {', '.join(CLUSTER_SCHEMES)}")
    return row


def ps_records() -> dict[str, type[PSParams]]:
    """Parameter-server scheme name -> its record class."""
    return {n: r for n, row in CLUSTER_SCHEMES.items() if (r := row.ps_params) is not None}


def scheme_params(name: str, **knobs: Any) -> PSParams:
    """The record of parameter-server scheme ``name`` with ``knobs`` (the record's field names).

    Raises
    ------
    ValueError
        If ``name`` is not a parameter-server scheme.
    TypeError
        On a knob the record does not have.
    """
    record = scheme(name).ps_params
    if record is None:
        raise ValueError(f"{name!r} is not a parameter-server scheme")
    return record(**{"scheme": name, **knobs})

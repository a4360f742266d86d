"""Command-line flags of the cluster mode (shared by the launcher and the torchrun entry).

``--scheme`` picks a *family* from :data:`FAMILIES`: the parameter-server schemes (this
module's PS flags, a :class:`ClusterConfig`) or the all-reduce family (:mod:`.reduce_cli`, a
:class:`~fl_r2sp.cluster.runtime.reduce.config.ReduceRunConfig`); the rank entry dispatches on
the config's type. A family owns its flags: one typed with another family's scheme is refused
(exit 2) instead of being silently ignored. A new runtime adds one :class:`SchemeFamily` row.

No flag is a prefix of one of torchrun's own flags (``torchrun`` would otherwise take it as an
abbreviation of its flag and fail with "ambiguous option"); a test checks this against
torchrun's parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.ps.params import SCHEMES, T_MEASURES, TUNING_RULES, SchemeParams
from fl_r2sp.cluster.policies.reduce import REDUCE_SCHEMES
from fl_r2sp.cluster.runtime.common.cli_values import parse_floats as _floats
from fl_r2sp.cluster.runtime.dssync import cli as dssync_cli
from fl_r2sp.cluster.runtime.osp import cli as osp_cli
from fl_r2sp.cluster.runtime.reduce import cli as reduce_cli


class RunConfig(Protocol):
    """What the launchers need of any family's run configuration."""

    @property
    def world_size(self) -> int:
        """Ranks the run starts."""
        ...

    @property
    def run_timeout_s(self) -> float:
        """Wall limit of the run, s."""
        ...

    def validate(self, check_model: bool = True) -> Any:
        """Raise ValueError on a bad field; return the config."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict that :func:`fl_r2sp.cluster.runtime.rank.run_rank` accepts."""
        ...


@dataclass(frozen=True)
class SchemeFamily:
    """One runtime: its schemes, its own flags, and how a run config is built from them.

    Attributes
    ----------
    title : str
        Help-group title, also named in the message that refuses a misplaced flag.
    schemes : tuple of str
        ``--scheme`` values it runs (a scheme belongs to one family).
    add_flags : callable
        ``add_flags(group)`` adds the family's flags.
    build : callable
        ``build(ns, base, given) -> RunConfig`` (not yet validated); ``given`` holds the
        dests the user typed; raises ValueError on a bad combination.
    describe : callable
        ``describe(cfg) -> str``: the one-line announcement of the run.
    """

    title: str
    schemes: tuple[str, ...]
    add_flags: Callable[[argparse._ArgumentGroup], None]
    build: Callable[[argparse.Namespace, ClusterConfig, frozenset[str]], Any]
    describe: Callable[[Any], str]


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def build_parser(prog: str = "python -m fl_r2sp.cluster") -> argparse.ArgumentParser:
    """The argument parser; defaults are :class:`ClusterConfig`'s and :class:`SchemeParams`'."""
    p = argparse.ArgumentParser(
        prog=prog,
        allow_abbrev=False,
        description="Data-parallel training on torch.distributed (gloo): parameter servers with "
        "BSP, ASP, SSP, R²SP or SAFA coordination, or decentralised all reduce, partial reduce "
        "and selective reduce.",
    )
    _job_flags(p.add_argument_group("job"), ClusterConfig())
    _emulation_flags(p.add_argument_group("emulation and limits"), ClusterConfig())
    for family in FAMILIES:
        family.add_flags(p.add_argument_group(f"{family.title} ({', '.join(family.schemes)})"))
    return p


def _job_flags(g: argparse._ArgumentGroup, d: ClusterConfig) -> None:
    a = g.add_argument
    a("--scheme", choices=[s for f in FAMILIES for s in f.schemes], default="r2sp",
      help="coordination scheme [r2sp]")  # fmt: skip
    a("--workers", type=int, default=d.workers, help=f"N worker ranks [{d.workers}]")
    a("--model", default=d.model, help=f"mlp, mlp-wide, resnet32, alexnet, vgg16, transformer "
                                       f"[{d.model}]")  # fmt: skip
    a("--dataset", default=d.dataset, help=f"cifar10, synthetic, copy, reverse [{d.dataset}]")
    a("--data-dir", default=d.data_dir, help="folder of the CIFAR-10 files [$FL_R2SP_DATA ...]")
    a("--max-train", type=int, default=d.max_train, help="N train examples, stratified (0 = all)")
    a("--batch-size", type=int, default=d.batch_size, help=f"initial batch size [{d.batch_size}]")
    a("--lr", type=float, default=d.lr, help=f"learning rate [{d.lr}]")
    a("--iterations", type=int, default=d.max_iterations,
      help=f"iterations per worker [{d.max_iterations}]")  # fmt: skip
    a("--loss-threshold", type=float, default=d.loss_threshold,
      help="stop once the training loss stays below it (0 = off) [0]")  # fmt: skip
    a("--convergence-window", type=int, default=d.convergence_window,
      help=f"iterations below the threshold [{d.convergence_window}]")  # fmt: skip
    a("--seed", type=int, default=d.seed, help=f"seed [{d.seed}]")
    a("--run-dir", default=d.run_dir, help=f"parent of the run directory [{d.run_dir}]")


def _ps_flags(g: argparse._ArgumentGroup) -> None:
    d, sp = ClusterConfig(), SchemeParams("r2sp")
    a = g.add_argument
    a("--servers", type=int, default=d.servers, help=f"S parameter servers [{d.servers}]")
    a("--momentum", type=float, default=d.momentum, help=f"PS momentum [{d.momentum}]")
    a("--server-bandwidth", type=float, default=d.server_bandwidth_mb_s,
      help="cap on each PS's ingress and egress, MB/s (0 = unlimited) [0]")  # fmt: skip
    a("--eval-samples", type=int, default=d.eval_samples,
      help=f"test examples evaluated at the end (0 = none) [{d.eval_samples}]")  # fmt: skip
    a("--progress", type=float, default=d.progress_s,
      help=f"seconds between progress lines (0 = quiet) [{d.progress_s:.0f}]")  # fmt: skip
    a("--no-plots", action="store_true", help="do not draw gantt.png / gaps.png")
    a("--gap-factor", type=float, default=sp.gap_factor, help=f"R²SP r [{sp.gap_factor}]")
    a("--ema-weight", type=float, default=sp.ema_weight, help=f"R²SP EMA weight [{sp.ema_weight}]")
    a("--t-measure", choices=T_MEASURES, default=sp.t_measure, help="R²SP T estimate [active]")
    a("--tuning", choices=TUNING_RULES, default=sp.tuning, help="R²SP batch tuning [none]")
    a("--tuning-warmup", type=int, default=sp.tuning_warmup,
      help=f"iterations before tuning [{sp.tuning_warmup}]")  # fmt: skip
    a("--ssp-bound", type=int, default=sp.ssp_bound, help=f"SSP bound s [{sp.ssp_bound}]")
    a("--safa-staleness-bound", type=int, default=sp.safa_staleness_bound,
      help=f"SAFA lag tolerance [{sp.safa_staleness_bound}]")  # fmt: skip
    a("--safa-quorum", type=float, default=sp.safa_quorum, help=f"SAFA quorum [{sp.safa_quorum}]")
    a("--safa-deadline", type=float, default=sp.safa_deadline_s, help="SAFA round deadline s [inf]")
    osp_cli.add_flags(g)


def _emulation_flags(g: argparse._ArgumentGroup, d: ClusterConfig) -> None:
    a = g.add_argument
    a("--chunk-kb", type=int, default=d.chunk_kb, help=f"throttled chunk KiB [{d.chunk_kb}]")
    a("--compute-multipliers", type=_floats, default=d.compute_multipliers,
      help="per-worker slowdown factors >= 1, comma-separated")  # fmt: skip
    a("--delays", type=_floats, default=d.iteration_delays,
      help="per-worker injected delay per iteration in s, comma-separated")  # fmt: skip
    a("--devices", type=_names, default=d.devices,
      help="worker devices round-robin: cpu, cuda, cuda:0,cuda:1 [cpu]")  # fmt: skip
    a("--threads", type=int, default=d.threads, help=f"torch threads per rank [{d.threads}]")
    a("--timeout", type=float, default=d.timeout_s,
      help=f"longest single blocking wait, s [{d.timeout_s:.0f}]")  # fmt: skip
    a("--run-timeout", type=float, default=d.run_timeout_s,
      help=f"wall limit of the run, s [{d.run_timeout_s:.0f}]")  # fmt: skip
    a("--launch-method", choices=("forkserver", "spawn"), default="forkserver",
      help="how python -m fl_r2sp.cluster starts rank processes (forkserver imports torch once; "
           "ignored under torchrun) [forkserver]")  # fmt: skip


def _base_config(ns: argparse.Namespace) -> ClusterConfig:
    """The shared knobs; PS scheme knobs only for a PS scheme (others keep the defaults)."""
    scheme = SchemeParams(
        ns.scheme, gap_factor=ns.gap_factor, ema_weight=ns.ema_weight, ssp_bound=ns.ssp_bound,
        tuning=ns.tuning, tuning_warmup=ns.tuning_warmup, t_measure=ns.t_measure,
        safa_staleness_bound=ns.safa_staleness_bound, safa_quorum=ns.safa_quorum,
        safa_deadline_s=ns.safa_deadline, **osp_cli.scheme_kwargs(ns),
    ) if ns.scheme in SCHEMES else ClusterConfig().scheme  # fmt: skip
    return ClusterConfig(
        workers=ns.workers, servers=ns.servers, scheme=scheme, model=ns.model,
        dataset=ns.dataset, data_dir=ns.data_dir, max_train=ns.max_train,
        batch_size=ns.batch_size, lr=ns.lr, momentum=ns.momentum, max_iterations=ns.iterations,
        loss_threshold=ns.loss_threshold, convergence_window=ns.convergence_window,
        server_bandwidth_mb_s=ns.server_bandwidth, chunk_kb=ns.chunk_kb,
        compute_multipliers=ns.compute_multipliers, iteration_delays=ns.delays,
        devices=ns.devices, threads=ns.threads, seed=ns.seed, timeout_s=ns.timeout,
        run_timeout_s=ns.run_timeout, run_dir=ns.run_dir, eval_samples=ns.eval_samples,
        progress_s=ns.progress, plots=not ns.no_plots,
    )  # fmt: skip


def _describe_ps(cfg: ClusterConfig) -> str:
    return (f"{cfg.scheme.scheme}: {cfg.servers} PS + {cfg.workers} workers, {cfg.model} on "
            f"{cfg.dataset}, {cfg.max_iterations} iterations per worker")  # fmt: skip


#: The scheme table: one row per runtime (the first is the default family).
FAMILIES: tuple[SchemeFamily, ...] = (
    SchemeFamily("parameter-server", SCHEMES, _ps_flags, lambda ns, b, g: b, _describe_ps),
    SchemeFamily("all-reduce family", REDUCE_SCHEMES, *reduce_cli.FAMILY_HOOKS),
    SchemeFamily("DS-Sync family", dssync_cli.CLI_SCHEMES, *dssync_cli.FAMILY_HOOKS),
)


def family_of(scheme: str) -> SchemeFamily:
    """The family that runs ``scheme``.

    Raises
    ------
    ValueError
        If no family, or more than one, lists it.
    """
    found = [f for f in FAMILIES if scheme in f.schemes]
    if len(found) != 1:
        raise ValueError(f"scheme {scheme!r} is run by {len(found)} families (need exactly 1)")
    return found[0]


def _owners() -> dict[str, SchemeFamily]:
    """Flag dest -> the family that owns it (shared flags are in no family)."""
    owners: dict[str, SchemeFamily] = {}
    for family in FAMILIES:
        group = argparse.ArgumentParser(add_help=False).add_argument_group()
        family.add_flags(group)
        owners.update({action.dest: family for action in group._group_actions})
    return owners


def given_flags(argv: Sequence[str] | None = None) -> frozenset[str]:
    """The dests of the flags actually typed in ``argv`` (None: ``sys.argv[1:]``)."""
    shadow = build_parser()
    for action in shadow._actions:
        action.default = argparse.SUPPRESS
    return frozenset(vars(shadow.parse_args(argv)))


def config_from_namespace(ns: argparse.Namespace, given: frozenset[str] = frozenset()) -> Any:
    """Turn parsed flags into a (not yet validated) run config of ``ns.scheme``'s family.

    ``given`` (:func:`given_flags`) names the flags the user typed; one owned by another
    family, or refused by the family's ``build``, raises ValueError. A PS scheme gives a
    :class:`ClusterConfig`, an all-reduce-family scheme a ``ReduceRunConfig``.
    """
    family = family_of(ns.scheme)
    owners = _owners()
    for dest in sorted(given):
        owner = owners.get(dest)
        if owner is not None and owner is not family:
            flag = "--" + dest.replace("_", "-")
            owned = f"the {owner.title} schemes ({', '.join(owner.schemes)})"
            raise ValueError(f"{flag} applies to {owned}, not to --scheme {ns.scheme}")
    return family.build(ns, _base_config(ns), given)


def describe(cfg: RunConfig, scheme: str) -> str:
    """The one-line announcement of a run of ``scheme``."""
    return str(family_of(scheme).describe(cfg))


def parse(argv: Sequence[str] | None = None) -> tuple[RunConfig, argparse.Namespace]:
    """Parse ``argv`` into a validated run config and the raw flags.

    Exits with status 2 and a message naming the problem if a flag is bad or does not apply
    to the scheme.
    """
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        cfg: RunConfig = config_from_namespace(ns, given_flags(argv))
        cfg.validate()
        return cfg, ns
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def config_from_args(argv: Sequence[str] | None = None) -> RunConfig:
    """Parse ``argv`` into a validated run config (exit 2 with a message if bad)."""
    return parse(argv)[0]

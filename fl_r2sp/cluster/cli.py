"""Command-line flags of the cluster mode (shared by the launcher and the torchrun entry).

``--scheme`` picks a row of the scheme table (:data:`fl_r2sp.cluster.schemes.CLUSTER_SCHEMES`); its
family's flags (a help group per family, holding the family's shared flags and its schemes'
record flags) build the family's run config: a :class:`ClusterConfig` for a parameter-server
scheme, a ``ReduceRunConfig`` or ``DSSyncRunConfig`` otherwise. A family owns its flags: one
typed with another family's scheme is refused (exit 2) instead of being silently ignored.
Nothing here names a scheme: a new one is a new table row.

No flag is a prefix of one of torchrun's own flags (``torchrun`` would otherwise take it as an
abbreviation of its flag and fail with "ambiguous option"); a test checks this against
torchrun's parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.common.params import PSParams
from fl_r2sp.cluster.runtime.common.cli_values import parse_floats as _floats
from fl_r2sp.cluster.runtime.common.cli_values import parse_sample_cost
from fl_r2sp.cluster.runtime.common.run_config import ClusterRunConfig
from fl_r2sp.cluster.schemes import CLUSTER_SCHEMES, Family, families, names_of, scheme


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def build_parser(prog: str = "python -m fl_r2sp.cluster") -> argparse.ArgumentParser:
    """The argument parser; defaults are :class:`ClusterConfig`'s and the scheme records'."""
    p = argparse.ArgumentParser(
        prog=prog,
        allow_abbrev=False,
        description="Data-parallel training on torch.distributed (gloo): parameter servers with "
        "BSP, ASP, SSP, R²SP, SAFA or OSP coordination, or decentralised all reduce, partial "
        "reduce, selective reduce and DS-Sync.",
    )
    _job_flags(p.add_argument_group("job"), ClusterConfig())
    _emulation_flags(p.add_argument_group("emulation and limits"), ClusterConfig())
    for family in families():
        title = f"{family.title} ({', '.join(names_of(family))})"
        _family_flags(p.add_argument_group(title), family)
    return p


def _family_flags(g: argparse._ArgumentGroup, family: Family) -> None:
    """The family's shared flags, then each of its record classes' own flags (once each)."""
    family.add_flags(g)
    records = [row.ps_params for row in CLUSTER_SCHEMES.values() if row.family is family]
    for record in dict.fromkeys(r for r in records if r is not None):
        record.add_flags(g)


def _job_flags(g: argparse._ArgumentGroup, d: ClusterConfig) -> None:
    a = g.add_argument
    a("--scheme", choices=list(CLUSTER_SCHEMES), default=d.scheme_name,
      help=f"coordination scheme [{d.scheme_name}]")  # fmt: skip
    a("--workers", type=int, default=d.workers, help=f"N worker ranks [{d.workers}]")
    a("--model", default=d.model, help="mlp, mlp-wide, resnet32, alexnet, vgg16, transformer, or "
      f"your factory's import path package.module:function [{d.model}]")  # fmt: skip
    a("--dataset", default=d.dataset, help="cifar10, synthetic, copy, reverse, or your factory's "
      f"import path [{d.dataset}]")  # fmt: skip
    a("--loss", default=d.loss, help="import path of your loss(outputs, targets) "
      "[cross-entropy]")  # fmt: skip
    a("--evaluate", default=d.evaluate, help="import path of your evaluate(model) -> {name: value}"
      " [the built-in test accuracy for a built-in dataset, else none]")  # fmt: skip
    a("--data-dir", default=d.data_dir, help="folder of the CIFAR-10 files [$FL_R2SP_DATA ...]")
    a("--max-train", type=int, default=d.max_train, help="N train examples, stratified (0 = all)")
    a("--batch-size", type=int, default=d.batch_size, help=f"initial batch size [{d.batch_size}]")
    a("--lr", type=float, default=d.lr, help=f"learning rate [{d.lr}]")
    a("--iterations", type=int, default=d.max_iterations,
      help="iterations per worker; the all-reduce family shares a budget of workers x "
           "iterations among the workers (a fast worker may run more, and the survivors of a "
           "lost worker share its unused part), reported per worker in the summary's "
           f"iterations_per_worker [{d.max_iterations}]")  # fmt: skip
    a("--loss-threshold", type=float, default=d.loss_threshold,
      help="stop once the training loss stays below it (0 = off) [0]")  # fmt: skip
    a("--convergence-window", type=int, default=d.convergence_window,
      help=f"iterations below the threshold [{d.convergence_window}]")  # fmt: skip
    a("--seed", type=int, default=d.seed, help=f"seed [{d.seed}]")
    a("--run-dir", default=d.run_dir,
      help="parent of the run folder; every family writes the same files there (config.json, "
           "run.json, summary.json, workers.csv, COMPLETE) and the supervisor writes "
           f"summary.json of any ending rank 0 did not write up [{d.run_dir}]")  # fmt: skip
    a("--no-plots", action="store_true",
      help="do not draw the figures at the end (gantt.png in every family, gaps.png in a "
           "parameter-server run)")  # fmt: skip


def _emulation_flags(g: argparse._ArgumentGroup, d: ClusterConfig) -> None:
    a = g.add_argument
    a("--chunk-kb", type=int, default=d.chunk_kb, help=f"throttled chunk KiB [{d.chunk_kb}]")
    a("--compute-multipliers", type=_floats, default=d.compute_multipliers,
      help="per-worker slowdown factors >= 1, comma-separated")  # fmt: skip
    a("--compute-model", choices=("real", "emulated"), default=d.compute_model,
      help="real compute times, or measured cost x batch x multiplier served by sleeping "
           f"(emulated dedicated devices) [{d.compute_model}]")  # fmt: skip
    a("--sample-cost", type=parse_sample_cost, default=d.sample_cost_s, metavar="auto|SECONDS",
      help="emulated compute's per-sample cost shared by every worker: auto (measured once per "
           "run, all workers together, median) or seconds > 0 [auto]")  # fmt: skip
    a("--delays", type=_floats, default=d.iteration_delays,
      help="per-worker injected delay per iteration in s, comma-separated")  # fmt: skip
    a("--devices", type=_names, default=d.devices,
      help="worker devices round-robin: cpu, cuda, cuda:0,cuda:1 [cpu]")  # fmt: skip
    a("--threads", type=int, default=d.threads, help=f"torch threads per rank [{d.threads}]")
    a("--timeout", type=float, default=d.timeout_s,
      help="longest single blocking wait on a peer that hangs without dying, s (a peer whose "
           f"process ended is dropped at once) [{d.timeout_s:.0f}]")  # fmt: skip
    a("--run-timeout", type=float, default=d.run_timeout_s,
      help="wall limit of the training, s, in every family: the workers stop, rank 0 writes "
           "the summary with status timeout, and the command exits 124 "
           f"[{d.run_timeout_s:.0f}]")  # fmt: skip
    a("--launch-method", choices=("forkserver", "spawn"), default="forkserver",
      help="how python -m fl_r2sp.cluster starts rank processes (forkserver imports torch once; "
           "ignored under torchrun) [forkserver]")  # fmt: skip


def _base_config(ns: argparse.Namespace) -> ClusterConfig:
    """The shared knobs; the scheme's record for a PS scheme (others keep the default)."""
    record = scheme(ns.scheme).ps_params
    params: PSParams = (record.from_flags(ns.scheme, ns) if record is not None
                        else ClusterConfig().scheme)  # fmt: skip
    return ClusterConfig(
        workers=ns.workers, servers=ns.servers, scheme=params, model=ns.model,
        dataset=ns.dataset, loss=ns.loss, evaluate=ns.evaluate, data_dir=ns.data_dir,
        max_train=ns.max_train,
        batch_size=ns.batch_size, lr=ns.lr, momentum=ns.momentum, max_iterations=ns.iterations,
        loss_threshold=ns.loss_threshold, convergence_window=ns.convergence_window,
        server_bandwidth_mb_s=ns.server_bandwidth, chunk_kb=ns.chunk_kb,
        compute_multipliers=ns.compute_multipliers, iteration_delays=ns.delays,
        compute_model=ns.compute_model, sample_cost_s=ns.sample_cost,
        devices=ns.devices, threads=ns.threads, seed=ns.seed, timeout_s=ns.timeout,
        run_timeout_s=ns.run_timeout, run_dir=ns.run_dir, eval_samples=ns.eval_samples,
        progress_s=ns.progress, plots=not ns.no_plots,
    )  # fmt: skip


def _owners() -> dict[str, Family]:
    """Flag dest -> the family that owns it (shared flags are in no family)."""
    owners: dict[str, Family] = {}
    for family in families():
        group = argparse.ArgumentParser(add_help=False).add_argument_group()
        _family_flags(group, family)
        owners.update({action.dest: family for action in group._group_actions})
    return owners


def given_flags(argv: Sequence[str] | None = None) -> frozenset[str]:
    """The dests of the flags actually typed in ``argv`` (None: ``sys.argv[1:]``)."""
    shadow = build_parser()
    for action in shadow._actions:
        action.default = argparse.SUPPRESS
    return frozenset(vars(shadow.parse_args(argv)))


def config_from_namespace(
    ns: argparse.Namespace, given: frozenset[str] = frozenset()
) -> ClusterRunConfig:
    """Turn parsed flags into a (not yet validated) run config of ``ns.scheme``'s family.

    ``given`` (:func:`given_flags`) names the flags the user typed; one owned by another
    family, or refused by the family's ``build``, raises ValueError. A PS scheme gives a
    :class:`ClusterConfig`, an all-reduce-family scheme a ``ReduceRunConfig``.
    """
    family = scheme(ns.scheme).family
    owners = _owners()
    for dest in sorted(given):
        owner = owners.get(dest)
        if owner is not None and owner is not family:
            flag = "--" + dest.replace("_", "-")
            owned = f"the {owner.title} schemes ({', '.join(names_of(owner))})"
            raise ValueError(f"{flag} applies to {owned}, not to --scheme {ns.scheme}")
    return family.build(ns, _base_config(ns), given)


def describe(cfg: ClusterRunConfig, name: str) -> str:
    """The one-line announcement of a run of scheme ``name``."""
    return str(scheme(name).family.describe(cfg))


def parse(argv: Sequence[str] | None = None) -> tuple[ClusterRunConfig, argparse.Namespace]:
    """Parse ``argv`` into a validated run config and the raw flags.

    Exits with status 2 and a message naming the problem if a flag is bad or does not apply
    to the scheme.
    """
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        cfg: ClusterRunConfig = config_from_namespace(ns, given_flags(argv))
        cfg.validate()
        return cfg, ns
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def config_from_args(argv: Sequence[str] | None = None) -> ClusterRunConfig:
    """Parse ``argv`` into a validated run config (exit 2 with a message if bad)."""
    return parse(argv)[0]

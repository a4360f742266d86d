"""Command-line flags of the cluster mode (shared by the launcher and the torchrun entry).

No flag is a prefix of one of torchrun's own flags (``torchrun`` would otherwise take it as an
abbreviation of its flag and fail with "ambiguous option"); a test checks this against
torchrun's parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.params import SCHEMES, T_MEASURES, TUNING_RULES, SchemeParams


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def build_parser(prog: str = "python -m fl_r2sp.cluster") -> argparse.ArgumentParser:
    """The argument parser; defaults are :class:`ClusterConfig`'s and :class:`SchemeParams`'."""
    p = argparse.ArgumentParser(
        prog=prog,
        allow_abbrev=False,
        description="Parameter-server training on torch.distributed (gloo) with BSP, ASP, SSP, "
        "R²SP or SAFA coordination.",
    )
    _job_flags(p.add_argument_group("job"), ClusterConfig())
    _scheme_flags(p.add_argument_group("scheme"), SchemeParams("r2sp"))
    _emulation_flags(p.add_argument_group("emulation and limits"), ClusterConfig())
    return p


def _job_flags(g: argparse._ArgumentGroup, d: ClusterConfig) -> None:
    a = g.add_argument
    a("--scheme", choices=SCHEMES, default="r2sp", help="coordination scheme [r2sp]")
    a("--workers", type=int, default=d.workers, help=f"N worker ranks [{d.workers}]")
    a("--servers", type=int, default=d.servers, help=f"S parameter servers [{d.servers}]")
    a("--model", default=d.model, help=f"mlp, mlp-wide, resnet32, alexnet, vgg16, transformer "
                                       f"[{d.model}]")  # fmt: skip
    a("--dataset", default=d.dataset, help=f"cifar10, synthetic, copy, reverse [{d.dataset}]")
    a("--data-dir", default=d.data_dir, help="folder of the CIFAR-10 files [$FL_R2SP_DATA ...]")
    a("--max-train", type=int, default=d.max_train, help="N train examples, stratified (0 = all)")
    a("--batch-size", type=int, default=d.batch_size, help=f"initial batch size [{d.batch_size}]")
    a("--lr", type=float, default=d.lr, help=f"learning rate [{d.lr}]")
    a("--momentum", type=float, default=d.momentum, help=f"PS momentum [{d.momentum}]")
    a("--iterations", type=int, default=d.max_iterations,
      help=f"iterations per worker [{d.max_iterations}]")  # fmt: skip
    a("--loss-threshold", type=float, default=d.loss_threshold,
      help="stop once the training loss stays below it (0 = off) [0]")  # fmt: skip
    a("--convergence-window", type=int, default=d.convergence_window,
      help=f"iterations below the threshold [{d.convergence_window}]")  # fmt: skip
    a("--seed", type=int, default=d.seed, help=f"seed [{d.seed}]")
    a("--run-dir", default=d.run_dir, help=f"parent of the run directory [{d.run_dir}]")
    a("--eval-samples", type=int, default=d.eval_samples,
      help=f"test examples evaluated at the end (0 = none) [{d.eval_samples}]")  # fmt: skip
    a("--progress", type=float, default=d.progress_s,
      help=f"seconds between progress lines (0 = quiet) [{d.progress_s:.0f}]")  # fmt: skip
    a("--no-plots", action="store_true", help="do not draw gantt.png / gaps.png")


def _scheme_flags(g: argparse._ArgumentGroup, sp: SchemeParams) -> None:
    a = g.add_argument
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


def _emulation_flags(g: argparse._ArgumentGroup, d: ClusterConfig) -> None:
    a = g.add_argument
    a("--server-bandwidth", type=float, default=d.server_bandwidth_mb_s,
      help="cap on each PS's ingress and egress, MB/s (0 = unlimited) [0]")  # fmt: skip
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


def config_from_namespace(ns: argparse.Namespace) -> ClusterConfig:
    """Turn parsed flags into a (not yet validated) :class:`ClusterConfig`."""
    scheme = SchemeParams(
        ns.scheme, gap_factor=ns.gap_factor, ema_weight=ns.ema_weight, ssp_bound=ns.ssp_bound,
        tuning=ns.tuning, tuning_warmup=ns.tuning_warmup, t_measure=ns.t_measure,
        safa_staleness_bound=ns.safa_staleness_bound, safa_quorum=ns.safa_quorum,
        safa_deadline_s=ns.safa_deadline,
    )  # fmt: skip
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


def parse(argv: Sequence[str] | None = None) -> tuple[ClusterConfig, argparse.Namespace]:
    """Parse ``argv`` into a validated :class:`ClusterConfig` and the raw flags.

    Exits with status 2 and a message naming the problem if a flag is bad.
    """
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return config_from_namespace(ns).validate(), ns
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def config_from_args(argv: Sequence[str] | None = None) -> ClusterConfig:
    """Parse ``argv`` into a validated :class:`ClusterConfig` (exit 2 with a message if bad)."""
    return parse(argv)[0]

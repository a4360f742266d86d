"""Command-line flags of the all-reduce family (``--scheme allreduce|partial|selective``).

The scheme table (:mod:`fl_r2sp.cluster.schemes`) lists this module's functions in its family
row; the flags are refused with the parameter-server schemes (and the PS flags with these),
and within the family a knob is refused with a scheme that does not use it (the group-size
flags with ``allreduce``, the BAG/BPAWR flags with everything but ``selective``).

Flag names differ from the knob names where the knob's name would be a prefix of one of
torchrun's flags (``--p`` of ``--print-completion``): p is ``--group-min``.
"""

from __future__ import annotations

import argparse

from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.policies.reduce import REDUCE_SCHEMES, ReduceParams
from fl_r2sp.cluster.policies.reduce.params import HAZARDS, READINGS, WEIGHT_RULES
from fl_r2sp.cluster.runtime.common.cli_values import links_text, parse_floats
from fl_r2sp.cluster.runtime.reduce.config import BW_ESTIMATES, ReduceRunConfig

#: Flags (argparse dests) and the schemes of the family that use them.
ONLY_FOR: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("group_fraction", "group_min"), ("partial", "selective")),
    **dict.fromkeys(
        ("eta", "theta", "delta_t", "full_sync_every", "reading", "hazard", "min_samples"),
        ("selective",),
    ),
}


def add_flags(g: argparse._ArgumentGroup) -> None:
    """Add the family's flags to ``g``; defaults are :class:`ReduceRunConfig`'s and
    :class:`ReduceParams`' (shown in brackets in the help)."""
    r, d = ReduceParams("selective"), ReduceRunConfig()
    a = g.add_argument
    a("--group-fraction", type=float, default=r.p_fraction,
      help=f"partial/selective: p = max(2, round(f·n)), at most n [{r.p_fraction}]")  # fmt: skip
    a("--group-min", type=int, default=None,
      help="partial/selective: minimum group size p (overrides --group-fraction)")  # fmt: skip
    a("--eta", type=float, default=r.eta, help=f"selective: BAG tolerance η [{r.eta}]")
    a("--theta", type=float, default=r.theta,
      help=f"selective: BPAWR threshold θ (inf = never wait) [{r.theta}]")  # fmt: skip
    a("--delta-t", type=float, default=r.delta_t, help=f"selective: BPAWR slot Δt, s [{r.delta_t}]")
    a("--full-sync-every", type=int, default=None,
      help="selective: full weighted all-reduce every c syncs [never]")  # fmt: skip
    a("--reading", choices=READINGS, default=r.reading,
      help=f"selective: reading of the paper's pseudo-code [{r.reading}]")  # fmt: skip
    a("--hazard", choices=HAZARDS, default=r.hazard, help=f"selective: BPAWR's P(ready within Δt) "
                                                         f"[{r.hazard}]")  # fmt: skip
    a("--min-samples", type=int, default=r.min_samples,
      help=f"selective: compute rounds seen before BPAWR predicts [{r.min_samples}]")  # fmt: skip
    a("--reduce-weights", choices=WEIGHT_RULES, default=r.weights,
      help=f"member weights in a reduce [{r.weights}]")  # fmt: skip
    a("--link-max", type=float, default=d.link_max_mb_s,
      help="M of the link caps round(M·u, 3) MB/s, u ~ U[λ, 1] (0 = uncapped) [0]")  # fmt: skip
    a("--bw-lambda", type=float, default=d.bw_lambda, help=f"λ of the cap draw [{d.bw_lambda}]")
    a("--link-caps", type=parse_floats, default=d.link_caps_mb_s,
      help="per-worker link caps, MB/s, comma-separated (instead of --link-max)")  # fmt: skip
    a("--bw-estimate", choices=BW_ESTIMATES, default=d.bw_estimate,
      help=f"the controller's bandwidth view [{d.bw_estimate}]")  # fmt: skip
    a("--alpha", type=float, default=d.alpha_s, help=f"α of the ring time, s [{d.alpha_s}]")
    a("--ready-timeout", type=float, default=d.ready_timeout_s,
      help=f"lost if silent this long into its round, s [{d.ready_timeout_s:.0f}]")  # fmt: skip
    a("--cache-groups", type=int, default=d.cache_groups,
      help=f"process groups kept per worker (0 = one per reduce) [{d.cache_groups}]")  # fmt: skip


def build(ns: argparse.Namespace, base: ClusterConfig, given: frozenset[str]) -> ReduceRunConfig:
    """The (not yet validated) run of ``ns.scheme`` on ``base``.

    Raises
    ------
    ValueError
        If a flag in ``given`` (the dests the user typed) does not apply to ``ns.scheme``, or
        both ``--link-caps`` and ``--link-max`` were given.
    """
    if ns.scheme not in REDUCE_SCHEMES:
        raise ValueError(f"{ns.scheme!r} is not an all-reduce-family scheme")
    for dest in sorted(given):
        users = ONLY_FOR.get(dest)
        if users is not None and ns.scheme not in users:
            flag = "--" + dest.replace("_", "-")
            raise ValueError(f"{flag} applies to --scheme {' or '.join(users)}, not {ns.scheme}")
    if {"link_caps", "link_max"} <= given:
        raise ValueError("give --link-caps (explicit caps) or --link-max (drawn caps), not both")
    reduce = ReduceParams(
        ns.scheme, p_fraction=ns.group_fraction, p=ns.group_min, eta=ns.eta, theta=ns.theta,
        delta_t=ns.delta_t, full_sync_every=ns.full_sync_every, hazard=ns.hazard,
        reading=ns.reading, weights=ns.reduce_weights, min_samples=ns.min_samples,
    )  # fmt: skip
    return ReduceRunConfig(
        base=base, reduce=reduce, link_max_mb_s=ns.link_max, bw_lambda=ns.bw_lambda,
        link_caps_mb_s=tuple(ns.link_caps), bw_estimate=ns.bw_estimate, alpha_s=ns.alpha,
        ready_timeout_s=ns.ready_timeout, cache_groups=ns.cache_groups,
    )  # fmt: skip


def describe(cfg: ReduceRunConfig) -> str:
    """One line naming the run: scheme, workers, p, link caps."""
    b = cfg.base
    links = links_text(cfg.link_caps())
    p = cfg.reduce.group_min(b.workers) if cfg.reduce.scheme != "allreduce" else b.workers
    return (f"{cfg.reduce.scheme}: {b.workers} workers (no PS), p = {p}, {links}, "
            f"{b.model} on {b.dataset}, {b.max_iterations} rounds per worker")  # fmt: skip

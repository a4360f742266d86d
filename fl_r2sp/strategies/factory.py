"""Build the policy a :class:`~fl_r2sp.config.RunConfig` asks for."""

from __future__ import annotations

from collections.abc import Sequence

from fl_r2sp.config import RunConfig
from fl_r2sp.strategies.asp import ASPPolicy, FedAsyncPolicy
from fl_r2sp.strategies.base import Policy
from fl_r2sp.strategies.bsp import BSPPolicy
from fl_r2sp.strategies.fedbuff import FedBuffPolicy
from fl_r2sp.strategies.flr2sp import FLR2SPPolicy
from fl_r2sp.strategies.staleness import StalenessFn

STRATEGIES: tuple[str, ...] = ("fl-r2sp", "bsp", "asp", "fedasync", "fedbuff")


def make_policy(
    cfg: RunConfig, clients: Sequence[int], known_outliers: frozenset[int] = frozenset()
) -> Policy:
    """Return the policy of ``cfg.strategy`` for ``clients`` (partition ids).

    Parameters
    ----------
    cfg : RunConfig
        Run configuration; ``cfg.groups`` gives FL-R²SP's M.
    clients : sequence of int
        Partition ids taking part in the run.
    known_outliers : frozenset of int, default empty
        Ground-truth outlier ids (blacklist precision/recall).

    Raises
    ------
    ValueError
        For an unknown ``cfg.strategy`` or invalid policy arguments.
    """
    filter_args = dict(
        outlier_filter=cfg.outlier_filter, cosine_threshold=cfg.cosine_threshold,
        outlier_rounds=cfg.outlier_rounds, known_outliers=frozenset(known_outliers),
        cosine_reference=cfg.cosine_reference, score_stragglers=cfg.score_stragglers,
        max_failures=cfg.max_failures, outlier_warmup=cfg.outlier_warmup,
    )
    staleness = StalenessFn(cfg.staleness, cfg.staleness_a, cfg.staleness_b)
    if cfg.strategy == "fl-r2sp":
        return FLR2SPPolicy(
            clients, num_groups=cfg.groups, fraction=cfg.fraction, gap_factor=cfg.gap_factor,
            ema_weight=cfg.ema_weight, initial_round_time=cfg.initial_round_time,
            strict_order=cfg.strict_order, aggregation=cfg.aggregation, **filter_args,
        )
    if cfg.strategy == "bsp":
        return BSPPolicy(clients, fraction=cfg.fraction, sampling=cfg.bsp_sampling,
                         seed=cfg.seed, aggregation=cfg.aggregation, **filter_args)
    if cfg.strategy == "asp":
        return ASPPolicy(clients, mixing=cfg.asp_mixing, alpha=cfg.mixing_alpha,
                         staleness=staleness, max_failures=cfg.max_failures)
    if cfg.strategy == "fedasync":
        return FedAsyncPolicy(clients, alpha=cfg.mixing_alpha, staleness=staleness,
                              max_failures=cfg.max_failures)
    if cfg.strategy == "fedbuff":
        return FedBuffPolicy(clients, buffer_size=cfg.buffer_size, server_lr=cfg.server_lr,
                             staleness=staleness, max_failures=cfg.max_failures)
    raise ValueError(f"strategy={cfg.strategy!r} is not one of {', '.join(STRATEGIES)}")

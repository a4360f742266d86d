"""Flower ``Strategy`` classes: FLR2SP, BSP, ASP, FedAsync and FedBuff.

These are the *Flower classes*; the decision logic of each scheme is its
*policy*, plain Python in ``fl_r2sp.fl.policies`` (``FLR2SP`` runs
:class:`~fl_r2sp.fl.policies.flr2sp.FLR2SPPolicy`, ``BSP`` runs
:class:`~fl_r2sp.fl.policies.bsp.BSPPolicy`, ...). ``fl_r2sp.fl.policies``
re-exports these classes lazily, so the public import is
``from fl_r2sp.fl.flower.strategy import FLR2SP``.

Drop them into any ServerApp::

    strategy = FLR2SP(RunConfig(num_groups=8, fraction=0.75))
    result = strategy.start(grid=grid, initial_arrays=arrays, num_rounds=200)

``Strategy.start`` in Flower is round-synchronous; these classes override it
and drive ``grid.push_messages`` / ``grid.pull_messages`` themselves through
the event-driven server loop (virtual or wall clock, per ``RunConfig.clock``),
with at most one message in flight per node. ``num_rounds`` counts *global
model updates* (group applications for FL-R²SP, rounds for BSP, single
updates for ASP). The returned :class:`flwr.serverapp.strategy.Result` holds
the final arrays, central evaluations keyed by global-update number (with
``time`` = virtual or wall seconds) and the run summary under key 0 of
``train_metrics_clientapp``... see :meth:`EventDrivenStrategy.start`.

The round-based hooks (``configure_train`` / ``aggregate_train``) are also
implemented, so the classes work in code written for round-based strategies:
one call is one synchronous round over all nodes with the paper's
unweighted mean (or ``aggregation="weighted"``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from flwr.app import (
    DEFAULT_TTL,
    ArrayRecord,
    ConfigRecord,
    Message,
    MessageType,
    MetricRecord,
    RecordDict,
)
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Result, Strategy

from fl_r2sp.fl.clients.timing import JobTiming
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.discovery import PartitionMap
from fl_r2sp.fl.flower.federated_eval import (
    FederatedEvaluation,
    aggregate_metrics,
    check_evaluate_config,
    record_federated_eval,
)
from fl_r2sp.fl.flower.grid_transport import GridTransport, check_user_config, find_partitions
from fl_r2sp.fl.flower.log_output import ensure_log_output
from fl_r2sp.fl.flower.node_manifest import read_manifest
from fl_r2sp.fl.flower.object_wait import OBJECT_WAIT, bounded_object_pulls
from fl_r2sp.fl.flower.records import MetricValue, arrays_of, named_record, number
from fl_r2sp.fl.flower.retry import RetryPolicy
from fl_r2sp.fl.policies.aggregation import mean, weighted_mean
from fl_r2sp.fl.policies.outlier_rules import outlier_rule
from fl_r2sp.fl.policies.registry import SCHEMES, Scheme
from fl_r2sp.fl.server.loop_base import VersionedEvaluator
from fl_r2sp.fl.server.run_files import write_failed_start
from fl_r2sp.fl.server.run_output import RunOutput
from fl_r2sp.fl.server.runner import run
from fl_r2sp.models.weights import flatten, unflatten

log = logging.getLogger("fl_r2sp")


class EventDrivenStrategy(Strategy):
    """Base of the project's strategies (the class's registry row picks the policy).

    A subclass named like a row's ``flower_class`` of
    :data:`fl_r2sp.fl.policies.registry.SCHEMES` runs that row's scheme (a
    user subclass of ``FLR2SP`` runs FL-R²SP: the name is looked up along the
    class hierarchy).

    Parameters
    ----------
    config : RunConfig or None (default: None = all defaults)
        Every knob of the scheme, data, emulation and stopping.
    **overrides : Any
        Field overrides applied on top of ``config`` (e.g. ``fraction=0.5``).
    """

    def __init__(self, config: RunConfig | None = None, **overrides: Any) -> None:
        base = config if config is not None else RunConfig()
        self.cfg = base.replace(strategy=self.scheme().name, **overrides)

    @classmethod
    def scheme(cls) -> Scheme:
        """The registry row of this class.

        Raises
        ------
        TypeError
            If no class along the hierarchy is a registered Flower class.
        """
        by_class = {s.flower_class: s for s in SCHEMES.values() if s.build is not None}
        for klass in cls.__mro__:
            if klass.__name__ in by_class:
                return by_class[klass.__name__]
        raise TypeError(
            f"{cls.__name__} is no registered scheme's Flower class; subclass one "
            f"of {', '.join(by_class)}"
        )

    def summary(self) -> None:
        """Log the scheme's knobs."""
        c = self.cfg
        log.info(
            "\t├── scheme %s (%s), clock %s, seed %d",
            c.strategy,
            self.scheme().description,
            c.clock,
            c.seed,
        )
        log.info(
            "\t├── M=%d groups, C=%.2f, r=%.2f, EMA weight %.2f",
            c.groups,
            c.fraction,
            c.gap_factor,
            c.ema_weight,
        )
        # Only the knobs of the rule in use: beta means nothing to the relative rule.
        cut = outlier_rule(c.outlier_rule, c.scheme_params().outliers).knobs(c.cosine_threshold)
        log.info(
            "\t└── outlier filter %s (rule %s, %s, %d rounds, warm-up %d)",
            c.outlier_filter,
            c.outlier_rule,
            cut,
            c.outlier_rounds,
            c.outlier_warmup,
        )

    #: The model given to :meth:`start` is the project's own (``model`` on ``dataset``,
    #: built by the project's ServerApp, which sets this): only then, with no
    #: ``evaluate_fn``, is it scored on the project's test split. False (default): the
    #: user's model is opaque; nothing of the project's model or data is loaded for it.
    own_model: bool = False

    # pylint: disable=too-many-arguments
    def start(
        self,
        grid: Grid,
        initial_arrays: ArrayRecord,
        num_rounds: int = 3,
        timeout: float = 3600,
        train_config: ConfigRecord | None = None,
        evaluate_config: ConfigRecord | None = None,
        evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None,
    ) -> Result:
        """Run the scheme event by event until its stop condition.

        Works with any ClientApp written as Flower's templates write it: no query handler
        needed (nodes are numbered by :meth:`PartitionMap.number_stock`'s rule), replies
        need only ``arrays`` and metrics ``num-examples`` (:mod:`.replies`).

        Parameters
        ----------
        grid : Grid
            The ServerApp's grid.
        initial_arrays : ArrayRecord
            Initial model; any arrays (names, order, shapes and dtypes are kept: a
            float64 model aggregates in float64).
        num_rounds : int (default: 3)
            Number of global model updates (0 = use the config's stop rules).
        timeout : float (default: 3600)
            ``job-timeout``: wall clock, seconds before an unanswered job counts as
            failed; virtual clock, seconds without any reply before the run stops.
            Also bounds the wait for one federated evaluation's replies.
        train_config : ConfigRecord, optional
            Sent in every train message's ``config`` with the project's keys
            (:data:`~fl_r2sp.fl.flower.grid_transport.PROJECT_KEYS`); a clash is
            refused (``ValueError`` naming the key) before anything is sent.
        evaluate_config : ConfigRecord, optional
            Sent in every evaluate message's ``config`` with ``server-round`` (the
            global-update number; a clash is refused likewise).
        evaluate_fn : callable, optional
            Flower-style central evaluation ``(k, arrays) -> MetricRecord`` with
            ``accuracy`` and ``loss`` keys, k counting the evaluations; default: the
            project's test split if :attr:`own_model`, else no central evaluation.

        Returns
        -------
        Result
            ``arrays`` = final model (the layout of ``initial_arrays``);
            ``evaluate_metrics_serverapp`` = central evaluations keyed by global-update
            number (accuracy, loss, time); ``evaluate_metrics_clientapp`` = federated
            evaluations (run-config ``federated-eval-every``) keyed likewise;
            ``train_metrics_clientapp[final update]`` = run summary figures.
        """
        ensure_log_output()  # progress lines in a user's app too, as Flower's strategies
        check_user_config(train_config)  # refused at start, before any message goes out
        check_evaluate_config(evaluate_config)
        cfg = self.cfg.replace(max_updates=num_rounds) if num_rounds else self.cfg
        cfg = cfg.replace(job_timeout=float(timeout))
        template = initial_arrays.to_numpy_ndarrays()
        names = list(initial_arrays.keys())  # kept in every message and in the Result
        log.info("Starting %s (%s clock)", type(self).__name__, cfg.clock)
        self.summary()
        virtual = cfg.clock == "virtual"
        retry = RetryPolicy.within(cfg.grid_retry_time)
        # Wall clock: a reply whose objects never arrive (a SuperNode stopped mid-upload) must
        # not hold the whole run for Flower's 180 s object-push session (object_wait). Virtual
        # clock: a lost reply stops the run anyway; a slow upload must not.
        with bounded_object_pulls(None if virtual else OBJECT_WAIT):
            pmap = _find_partitions(grid, cfg, retry)
            _explain_stock(pmap, cfg)
            # Virtual clock: a TTL of at least Flower's default (12 h), so that queued messages
            # do not expire; the loop's stall timeout (job-timeout) stops a hung run instead.
            # Wall clock with an adaptive job limit (job-timeout-factor): the limit may grow past
            # job-timeout, so the loop, not the TTL, decides when a job failed.
            long_ttl = virtual or cfg.job_timeout_factor > 0
            ttl = max(timeout, float(DEFAULT_TTL)) if long_ttl else max(timeout, 60.0)
            transport = GridTransport(
                grid,
                template,
                pmap.node_of,
                ttl=ttl,
                virtual=virtual,
                # Wall clock only: node loss and re-attachment are real-time events.
                pmap=None if virtual else pmap,
                retry=retry,
                train_config=train_config,
                timing=JobTiming(cfg),
                names=names,
            )
            fed = FederatedEvaluation(
                grid, pmap.node_of, template, evaluate_config, cfg.job_timeout, retry, names
            )
            evaluator = _wrap_evaluate_fn(evaluate_fn, template, names) if evaluate_fn else None
            out = run(
                cfg,
                transport=transport,
                initial=flatten(template),
                evaluator=evaluator,
                own_model=self.own_model,
                on_evaluate=_fed_hook(fed, cfg.federated_eval_every),
            )
            if cfg.federated_eval_every >= 0:
                last = int(out.history[-1]["version"]) if out.history else 0
                fed(last, out.weights)
                record_federated_eval(out.run_dir, fed.results, fed.failed)
        result = _to_result(out, template, names)
        result.evaluate_metrics_clientapp.update(fed.results)
        return result

    # -- round-based hooks (one synchronous round over all nodes) --------------------
    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """One train message per node, carrying ``arrays`` and ``config``."""
        config["server-round"] = server_round
        record = RecordDict({"arrays": arrays, "config": config})
        return [Message(record, n, MessageType.TRAIN) for n in grid.get_node_ids()]

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Mean of the valid replies (unweighted per the paper, or weighted)."""
        ok = [m for m in replies if not m.has_error()]
        for m in replies:
            if m.has_error():
                log.info(
                    "round %d: node %d failed: %s",
                    server_round,
                    m.metadata.src_node_id,
                    m.error.reason,
                )
        if not ok:
            return None, None
        arrays = [arrays_of(m.content) for m in ok]
        counts = [float(number(m.content["metrics"], "num-examples")) for m in ok]
        flats = [flatten(a) for a in arrays]
        flat = weighted_mean(flats, counts) if self.cfg.aggregation == "weighted" else mean(flats)
        loss = float(
            np.average(
                [float(number(m.content["metrics"], "train-loss", np.nan)) for m in ok],
                weights=counts,
            )
        )
        names = list(ok[0].content["arrays"].keys())
        return named_record(unflatten(flat, arrays[0]), names), MetricRecord({"train-loss": loss})

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """One evaluate message per node, carrying ``arrays`` and ``config``."""
        config["server-round"] = server_round
        record = RecordDict({"arrays": arrays, "config": config})
        return [Message(record, n, MessageType.EVALUATE) for n in grid.get_node_ids()]

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """Example-weighted mean of the replies' metrics (if any were requested)."""
        ok = [m.content["metrics"] for m in replies if not m.has_error()]
        return aggregate_metrics(ok) if ok else None


class FLR2SP(EventDrivenStrategy):
    """FL-R²SP as a Flower strategy; its policy is ``fl_r2sp.fl.policies.flr2sp.FLR2SPPolicy``.

    Parameters
    ----------
    config : RunConfig or None (default: None = all defaults)
        Every knob of the scheme, data, emulation and stopping; ``strategy`` is set to
        this class's scheme.
    **overrides : Any
        Field overrides applied on top of ``config`` (e.g. ``fraction=0.5``).
    """


class BSP(EventDrivenStrategy):
    """BSP as a Flower strategy; its policy is ``fl_r2sp.fl.policies.bsp.BSPPolicy``.

    Parameters
    ----------
    config : RunConfig or None (default: None = all defaults)
        Every knob of the scheme, data, emulation and stopping; ``strategy`` is set to
        this class's scheme.
    **overrides : Any
        Field overrides applied on top of ``config`` (e.g. ``fraction=0.5``).
    """


class ASP(EventDrivenStrategy):
    """ASP as a Flower strategy; its policy is ``fl_r2sp.fl.policies.asp.ASPPolicy``.

    Parameters
    ----------
    config : RunConfig or None (default: None = all defaults)
        Every knob of the scheme, data, emulation and stopping; ``strategy`` is set to
        this class's scheme.
    **overrides : Any
        Field overrides applied on top of ``config`` (e.g. ``fraction=0.5``).
    """


class FedAsync(EventDrivenStrategy):
    """FedAsync as a Flower strategy; its policy is ``fl_r2sp.fl.policies.asp.FedAsyncPolicy``.

    Parameters
    ----------
    config : RunConfig or None (default: None = all defaults)
        Every knob of the scheme, data, emulation and stopping; ``strategy`` is set to
        this class's scheme.
    **overrides : Any
        Field overrides applied on top of ``config`` (e.g. ``fraction=0.5``).
    """


class FedBuff(EventDrivenStrategy):
    """FedBuff as a Flower strategy; its policy is ``fl_r2sp.fl.policies.fedbuff.FedBuffPolicy``.

    Parameters
    ----------
    config : RunConfig or None (default: None = all defaults)
        Every knob of the scheme, data, emulation and stopping; ``strategy`` is set to
        this class's scheme.
    **overrides : Any
        Field overrides applied on top of ``config`` (e.g. ``fraction=0.5``).
    """


#: Scheme name -> Flower class, from the registry (every scheme with a policy).
STRATEGIES: dict[str, type[EventDrivenStrategy]] = {
    s.name: globals()[s.flower_class] for s in SCHEMES.values() if s.build is not None
}


def strategy_for(cfg: RunConfig) -> EventDrivenStrategy:
    """The Flower strategy of ``cfg.strategy``, configured by ``cfg``.

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration; ``cfg.strategy`` names the scheme.

    Returns
    -------
    EventDrivenStrategy
        A new instance of the scheme's Flower class (:data:`STRATEGIES`) holding ``cfg``.

    Raises
    ------
    ValueError
        For a strategy without a Flower class here (``fedavg`` is Flower's own,
        run by the ServerApp).
    """
    if cfg.strategy not in STRATEGIES:
        raise ValueError(
            f"strategy {cfg.strategy!r} has no Flower class here; known: {', '.join(STRATEGIES)}"
        )
    return STRATEGIES[cfg.strategy](cfg)


def _find_partitions(grid: Grid, cfg: RunConfig, retry: RetryPolicy) -> PartitionMap:
    """:func:`find_partitions` for ``cfg``; if it fails, the run's folder says so first.

    A run whose partitions never answered had no loop to write its folder; without one
    the failure would be only in the ServerApp's log (:func:`write_failed_start`).
    """
    try:
        return find_partitions(
            grid,
            timeout=cfg.node_wait,
            expected=cfg.num_partitions,
            wait_for_all=cfg.clock != "virtual" or not cfg.allow_missing_nodes,
            allow_missing=cfg.allow_missing_nodes,
            retry=retry,
            grace=cfg.node_grace,
            bindings=read_manifest(cfg.node_manifest) if cfg.node_manifest else None,
        )
    except (RuntimeError, ValueError) as exc:
        folder = write_failed_start(cfg, f"partition discovery: {exc}")
        log.error("run failed before training; its folder: %s", folder)
        raise


def _explain_stock(pmap: PartitionMap, cfg: RunConfig) -> None:
    """Say once what nodes without a query handler (stock ClientApps) mean for this run."""
    if not pmap.stock:
        return
    log.warning(
        "%d nodes have no query handler (stock ClientApps): numbered in ascending node-id "
        "order onto the free partition ids; node ids are random per run, so the numbering "
        "(groups i %% M, device speeds, delays) differs between runs. For reproducible runs "
        "wrap the ClientApp's train function with fl_r2sp.fl.flower.timed.",
        len(pmap.stock),
    )
    if cfg.clock == "wall" and cfg.delay != "none":
        log.warning(
            "wall clock: delay=%r is not applied to those nodes (nobody sleeps it); "
            "fl_r2sp.fl.flower.timed sleeps it in the ClientApp",
            cfg.delay,
        )


def _fed_hook(fed: FederatedEvaluation, every: int) -> Callable[[int, float, np.ndarray], None]:
    """The loop's ``on_evaluate``: federated evaluation every ``every`` global updates."""

    def hook(version: int, now: float, weights: np.ndarray) -> None:
        if every > 0 and version > 0 and version % every == 0:
            fed(version, weights)

    return hook


def _wrap_evaluate_fn(
    fn: Callable[[int, ArrayRecord], MetricRecord | None],
    template: list[np.ndarray],
    names: list[str] | None = None,
) -> VersionedEvaluator:
    """Adapt a Flower ``evaluate_fn`` to the loops' evaluator.

    Its ``server_round`` is the global update number of the weights (0: the initial model), the
    key of the same evaluation in ``Result.evaluate_metrics_serverapp``.
    """

    def score(version: int, weights: np.ndarray) -> tuple[float, float]:
        res = fn(version, named_record(unflatten(weights, template), names)) or MetricRecord()
        return float(number(res, "loss", np.nan)), float(number(res, "accuracy", np.nan))

    return VersionedEvaluator(score)


def _to_result(
    out: RunOutput, template: list[np.ndarray], names: list[str] | None = None
) -> Result:
    result = Result(arrays=named_record(unflatten(out.weights, template), names))
    for row in out.history:
        rec: dict[str, MetricValue] = {k: float(v) for k, v in row.items() if k != "version"}
        result.evaluate_metrics_serverapp[int(row["version"])] = MetricRecord(rec)
    figures: dict[str, MetricValue] = {
        k: float(v)
        for k, v in out.summary.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    last = int(out.history[-1]["version"]) if out.history else 0
    result.train_metrics_clientapp[last] = MetricRecord(figures)
    return result

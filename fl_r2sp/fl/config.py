"""Typed run configuration: one dataclass, one docstring per field, validated.

Every field maps to a Flower run-config key by replacing ``_`` with ``-``
(``num_groups`` <-> ``num-groups``); ``pyproject.toml``'s
``[tool.flwr.app.config]`` lists every key with the same default (a test
checks they agree). Override on the command line as usual::

    flwr run . --run-config "strategy='bsp' fraction=0.5"

Validation happens before any training starts and names the key, the value
and how to fix it.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from fl_r2sp.fl.config_checks import check as _check
from fl_r2sp.fl.config_checks import check_values
from fl_r2sp.fl.config_checks import coerce as _coerce
from fl_r2sp.fl.config_checks import key_of as _k
from fl_r2sp.fl.policies.aggregation import AggregationKind
from fl_r2sp.fl.policies.outlier_rules import OutlierRuleKind
from fl_r2sp.fl.policies.params import (
    BSP_SAMPLING,
    MAX_FAILURES,
    MAX_REJECTIONS,
    AspMixingKind,
    AsyncParams,
    BspSamplingKind,
    GroupParams,
    OutlierParams,
    SchemeParams,
    scheme_defaults,
)
from fl_r2sp.fl.policies.registry import SCHEMES
from fl_r2sp.fl.policies.scoring import CosineReferenceKind
from fl_r2sp.fl.policies.staleness import StalenessKind
from fl_r2sp.importpath import is_import_path

Clock = Literal["virtual", "wall"]
Dataset = Literal["digits", "cifar10", "kws", "kws-audio"]
ModelName = Literal["auto", "mlp", "cnn", "cnn-fedavg", "resnet20", "resnet20-a", "lstm"]
#: ``dataset`` and ``model`` take a registry name (the two Literals above) or a user's
#: import path ``package.module:factory`` (contract: docs/user-code.md).
DatasetSpec = str
ModelSpec = str
Partitioner = Literal["paper", "paper-strict", "dirichlet", "iid", "speaker"]
Executor = Literal["serial", "processes", "batched"]
ComputeDevice = Literal["auto", "cpu", "cuda"]
StackConv = Literal["grouped", "bmm"]
StackCompile = Literal["off", "default", "reduce-overhead", "max-autotune-no-cudagraphs"]


def _f(default: Any, doc: str) -> Any:
    return field(default=default, metadata={"doc": doc})


# The scheme knobs' defaults are the parameter records' (fl_r2sp.fl.policies.params):
# written there once, read here, and built back into records by scheme_params().
_GROUP, _OUTLIERS, _ASYNC = GroupParams(), OutlierParams(), AsyncParams()
_SCHEME_KEYS = frozenset(scheme_defaults())


@dataclass(frozen=True)
class RunConfig:
    """All knobs of a run (defaults are the paper's where it states one)."""

    # --- scheme ---------------------------------------------------------------
    strategy: str = _f(
        "fl-r2sp", "Scheme: " + ", ".join(SCHEMES) + " (fl_r2sp.fl.policies.registry.SCHEMES)."
    )
    clock: Clock = _f("virtual", "virtual (emulated time, deterministic) or wall (real time).")
    seed: int = _f(0, "Seed of every random choice (partitions, init, delays, SGD).")
    num_groups: int = _f(
        _GROUP.num_groups, "M, number of FL-R²SP groups (client i -> group i % M)."
    )
    group_size: int = _f(0, "Clients per group; if > 0 it overrides num-groups (M = N / size).")
    fraction: float = _f(
        _GROUP.fraction, "C: a round aggregates the first ceil(C * active members)."
    )
    gap_factor: float = _f(
        _GROUP.gap_factor, "r: next group may apply r*T/M after the last application."
    )
    ema_weight: float = _f(
        _GROUP.ema_weight, "Weight of the latest group round time in the EMA of T."
    )
    initial_round_time: float = _f(
        _GROUP.initial_round_time, "T before any group has reported (0 = no gap)."
    )
    strict_order: bool = _f(
        _GROUP.strict_order, "Groups apply in fixed order (paper); false = skip if not ready."
    )
    aggregation: AggregationKind = _f(
        _GROUP.aggregation,
        "Intra-group aggregate: mean (unweighted, paper), weighted (by num-examples), median, "
        "trimmed-mean or krum (Flower's FedMedian/FedTrimmedAvg/Krum rules); the cosine "
        "filter acts on top.",
    )
    trim_beta: float = _f(
        _GROUP.robust.trim_beta, "trimmed-mean: share cut from each tail, in [0, 0.5)."
    )
    krum_malicious: int = _f(
        _GROUP.robust.krum_malicious, "krum: f, malicious clients assumed among those collected."
    )
    krum_select: int = _f(
        _GROUP.robust.krum_select, "krum: updates averaged (1 = Krum, more = MultiKrum)."
    )
    outlier_filter: bool = _f(
        _OUTLIERS.enabled, "Blacklist clients whose deltas point away from the global update."
    )
    cosine_threshold: float = _f(
        _OUTLIERS.cosine_threshold, "beta: a score below this counts as an outlier round."
    )
    outlier_rounds: int = _f(_OUTLIERS.rounds, "Consecutive low-scored rounds before blacklisting.")
    cosine_reference: CosineReferenceKind = _f(
        _OUTLIERS.reference,
        "Reference delta of the cosine score: global-change (the paper's global update "
        "w_new - start_G), group, group-loo or global-step.",
    )
    outlier_warmup: int = _f(
        _OUTLIERS.warmup, "Group rounds not scored at the start, stragglers included (paper: 0)."
    )
    outlier_rule: OutlierRuleKind = _f(
        _OUTLIERS.rule,
        "What blacklists (fl_r2sp/fl/policies/outlier_rules.py): paper (cosine below "
        "cosine-threshold for outlier-rounds scored rounds), relative (below the group round's "
        "median by more than outlier-mad-k robust deviations for outlier-rounds rounds, with "
        "outlier-cap and outlier-probation) or oracle (the partition's known outliers are "
        "excluded from the start: an experiment's ceiling, never a default).",
    )
    outlier_mad_k: float = _f(
        _OUTLIERS.mad_k, "relative: k, robust deviations (1.4826 x MAD) below the median (> 0)."
    )
    outlier_mad_floor: float = _f(
        _OUTLIERS.mad_floor,
        "relative: least robust deviation in cosine units (>= 0): agreeing groups flag nobody.",
    )
    outlier_cap: float = _f(
        _OUTLIERS.cap,
        "relative: most share of a group's members blacklisted, in [0, 1]; never more than "
        "members - ceil(C * members), so the group keeps its full collection quorum.",
    )
    outlier_probation: int = _f(
        _OUTLIERS.probation,
        "relative: group rounds after which a blacklisted client is re-scored (not aggregated) "
        "and readmitted if its score is not low again (0 = never).",
    )
    score_stragglers: bool = _f(
        _OUTLIERS.score_stragglers, "Also score straggler updates for the outlier filter."
    )
    score_all_references: bool = _f(
        _OUTLIERS.all_references,
        "Record every cosine reference's score (cosine_<reference>) in each client_score row; "
        "only cosine-reference acts. With outlier-filter=false: all references on one run.",
    )
    bsp_sampling: BspSamplingKind = _f(
        BSP_SAMPLING, "BSP: first C*N replies, or sample C*N and wait all."
    )
    asp_mixing: AspMixingKind = _f(
        _ASYNC.mixing, "ASP mixing: (N'-1)/N' average or FedAsync alpha."
    )
    mixing_alpha: float = _f(_ASYNC.alpha, "FedAsync mixing weight alpha (before staleness).")
    staleness: StalenessKind = _f(
        _ASYNC.staleness.kind,
        "FedAsync/FedBuff staleness weight s(t); polynomial (1+t)^-a is FedBuff's.",
    )
    staleness_a: float = _f(_ASYNC.staleness.a, "Staleness exponent a (polynomial, hinge).")
    staleness_b: float = _f(_ASYNC.staleness.b, "Hinge staleness threshold b.")
    buffer_size: int = _f(_ASYNC.buffer_size, "FedBuff: K updates per server step.")
    server_lr: float = _f(
        _ASYNC.server_lr, "FedBuff server learning rate on the mean buffered delta."
    )
    max_failures: int = _f(
        MAX_FAILURES, "Consecutive failed jobs re-sent; one more drops the client."
    )
    max_rejections: int = _f(
        MAX_REJECTIONS,
        "FL-R²SP/BSP: consecutive updates rejected by admission that a client may send; one "
        "more drops it (a rejected update still answers its round; other schemes count it "
        "as a failed job).",
    )
    # --- data and model -------------------------------------------------------
    dataset: DatasetSpec = _f(
        "digits",
        "digits (embedded), cifar10, kws, kws-audio, or 'pkg.module:factory' (your own data).",
    )
    data_dir: str = _f("", "Data dir; '' = $FL_R2SP_DATA, <repo>/data, see datasets/paths.py.")
    download: bool = _f(False, "Allow torchvision to download CIFAR-10 if files are missing.")
    model: ModelSpec = _f(
        "auto", "Model; auto = mlp/cnn/lstm by dataset, or 'pkg.module:factory' (your own)."
    )
    num_partitions: int = _f(32, "N, number of clients (must match num-supernodes).")
    partitioner: Partitioner = _f(
        "paper",
        "paper (outliers), paper-strict (the paper's stated shares), dirichlet, iid or speaker.",
    )
    alpha: float = _f(10.0, "Dirichlet concentration of regular clients.")
    outlier_alpha: float = _f(0.1, "Dirichlet concentration of outlier clients.")
    outlier_fraction: float = _f(0.25, "Fraction of clients that are outliers, in [0, 1).")
    samples_per_client: int = _f(0, "Samples per client (0 = equal share of the train set).")
    max_train_samples: int = _f(0, "Subsample the train pool first (0 = all).")
    local_iterations: int = _f(20, "tau, local SGD iterations per round (paper: 100).")
    batch_size: int = _f(32, "Local mini-batch size.")
    lr: float = _f(0.1, "Local SGD learning rate (paper: 0.01; 0.1 suits the digits MLP).")
    momentum: float = _f(0.0, "Local SGD momentum.")
    weight_decay: float = _f(0.0, "Local SGD weight decay.")
    augment: bool = _f(False, "CIFAR-10 random crop + flip during local training.")
    timing_only: bool = _f(False, "Skip SGD (clients echo the model): timing experiments only.")
    torch_threads: int = _f(1, "torch.set_num_threads in clients (fixed for determinism).")
    executor: Executor = _f(
        "serial",
        "How in-process client jobs are computed: serial (one at a time, the reference), "
        "processes (a pool of single-threaded worker processes; bit-identical to serial) or "
        "batched (outstanding jobs as one stacked torch.func model; equal to serial within float "
        "tolerance). Virtual-time semantics do not change.",
    )
    compute_device: ComputeDevice = _f(
        "auto",
        "Where the batched executor trains: auto (cuda if available, else cpu), cpu or cuda; "
        "serial and processes always train on the CPU. Not the `device` speed model.",
    )
    executor_workers: int = _f(
        0, "Worker processes of executor=processes, and of batched on cpu (0 = one per core)."
    )
    executor_stack: int = _f(
        0, "Most jobs one batched stack trains together (0 = auto: 16 on cpu, 1024 on cuda)."
    )
    executor_conv: StackConv = _f(
        "grouped",
        "How batched stacks compute convolutions: grouped (vmap's grouped kernels) or bmm "
        "(unfold + one batched matrix product per layer; more memory).",
    )
    executor_compile: StackCompile = _f(
        "off", "torch.compile mode of the batched executor's step (off = eager)."
    )
    executor_cuda_graphs: bool = _f(
        False, "Batched executor on CUDA: replay each stack's steps from one captured CUDA graph."
    )
    # --- emulation ------------------------------------------------------------
    network: str = _f(
        "paper-ec2", "Network/device profile: paper-ec2, paper-ec2-fcfs or lan (virtual clock)."
    )
    delay: str = _f("lognormal(mu=-2,sigma=1)", "Injected delay before each push.")
    device: str = _f("profile", "Device speed model ('profile' = the profile's; virtual clock).")
    dropout: str = _f("none", "Availability model, e.g. bernoulli(p=0.05,down=30) (virtual clock).")
    attack: str = _f(
        "none",
        "Hostile clients (fl_r2sp/fl/clients/attacks.py): none, or terms joined by '+' of "
        "sign-flip, scale(k), huge(v), examples(n), each optionally @ids (e.g. "
        "'huge(1e30)@2+scale(1000)@5'); terms without ids hit the attack-fraction draw.",
    )
    attack_fraction: float = _f(
        0.0, "Share of clients (seeded draw, round(share * N)) that run the id-less attack terms."
    )
    # --- update admission and run health (fl_r2sp/fl/server/admission.py) --------
    admission_norm_factor: float = _f(
        10.0,
        "k: reject an update whose delta norm exceeds k x the median of recent accepted norms "
        "(k x the start model's norm during warm-up); 0 = no norm check.",
    )
    admission_warmup: int = _f(
        10, "Accepted updates before the median bound applies (the start-model bound before)."
    )
    admission_window: int = _f(50, "Recent accepted delta norms the median is taken over.")
    max_lost_share: float = _f(
        0.5, "A run that dropped more than this share of its clients ends failed (exit != 0)."
    )
    # --- stopping, evaluation, output -----------------------------------------
    max_updates: int = _f(60, "Stop after this many global updates (0 = no limit).")
    time_budget: float = _f(0.0, "Stop after this much (virtual or wall) time (0 = none).")
    convergence_window: int = _f(0, "Stop when accuracy stagnates this many evals (0 = off).")
    convergence_tol: float = _f(0.001, "Accuracy gain that counts as progress.")
    eval_every: int = _f(4, "Central evaluation every E global updates.")
    federated_eval_every: int = _f(
        0,
        "Flower strategies: federated evaluation (evaluate messages to every node's "
        "@app.evaluate(), with evaluate_config; metrics averaged by num-examples) every F "
        "global updates at the central-evaluation points, and always on the final model "
        "(0 = the final model only; -1 = never).",
    )
    run_dir: str = _f("runs", "Directory under which each run writes its folder.")
    plots: bool = _f(True, "Write PNG plots at the end of the run.")
    job_timeout: float = _f(
        600.0,
        "Wall clock: least real seconds before an unanswered job counts as failed (see "
        "job-timeout-factor). Virtual clock: "
        "real seconds without any reply before the run stops with an error (a slow reply never "
        "becomes a virtual failure); the Flower message TTL is at least 12 h there.",
    )
    allow_missing_nodes: bool = _f(
        False,
        "Flower: go on with the nodes that answered the partition query (within node-wait s) "
        "when fewer than num-partitions did; false = stop with an error naming the missing ones.",
    )
    node_wait: float = _f(
        120.0,
        "Flower: seconds to wait at start for num-partitions nodes to connect and answer "
        "(a node told another num-partitions stops the run as soon as it answers).",
    )
    node_grace: float = _f(
        15.0,
        "Flower: end the start wait early when fewer than num-partitions nodes are online, "
        "every one answered and none came or went for this many seconds (the run then fails "
        "naming the missing partitions, or goes on with allow-missing-nodes; 0 = wait node-wait).",
    )
    resend_backoff: float = _f(
        0.5,
        "Wall clock: seconds before re-sending to a client whose job failed with an error "
        "(not offline); doubles with each consecutive failure, up to 30 s (0 = at once).",
    )
    grid_retry_time: float = _f(
        60.0,
        "Flower: seconds a push/pull hitting a transient SuperLink error (HTTP 5xx, 'database "
        "is locked') is retried with backoff (waits doubling up to 2 s) before the job fails "
        "(a pull: the run stops).",
    )
    checkpoint_every: int = _f(
        0,
        "Save the server's whole state into the run directory every k global updates "
        "(atomically; 0 = off). Not for strategy=fedavg.",
    )
    resume_from: str = _f(
        "",
        "Run directory of a checkpointed, unfinished run to continue ('' = start fresh); "
        "the other keys must equal that run's, except output and executor keys.",
    )
    # --- progress: a run without it fails; wall-clock job timeouts adapt --------
    max_rejected_share: float = _f(
        0.5,
        "A run ends failed when more than this share of its finished jobs brought no accepted "
        "update (rejected by admission, or dropped: error, timeout, offline); 1 = off.",
    )
    max_update_gap: float = _f(
        1800.0,
        "Wall clock: a run ends failed after this many real seconds without a global update "
        "(0 = off). On either clock a run that ends with no global update has failed.",
    )
    job_timeout_factor: float = _f(
        4.0,
        "Wall clock: an unanswered job fails after max(job-timeout, this x the EMA of the "
        "measured job round trips); a timed-out job counts as a round trip of its wait, so the "
        "limit grows under load (0 = job-timeout alone).",
    )
    node_manifest: str = _f(
        "",
        "Flower, secure deployments: JSON file binding each partition id to the node id of its "
        "registered key (written by deploy_local --secure); a node claiming a partition not "
        "bound to it gets no work ('' = any node may claim any partition).",
    )

    # ------------------------------------------------------------------------
    @classmethod
    def keys(cls) -> dict[str, Any]:
        """Run-config keys (kebab-case) with their defaults."""
        return {f.name.replace("_", "-"): f.default for f in fields(cls)}

    @classmethod
    def from_run_config(cls, run_config: dict[str, Any], **overrides: Any) -> RunConfig:
        """Build and validate from a Flower run config (kebab-case keys).

        Unknown keys raise ``ValueError`` listing the known ones; missing keys
        take the dataclass default.
        """
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in run_config.items():
            name = key.replace("-", "_")
            if name not in known:
                close = difflib.get_close_matches(key, cls.keys(), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(
                    f"unknown run-config key {key!r}; {hint}accepted keys: "
                    + ", ".join(sorted(cls.keys()))
                )
            kwargs[name] = _coerce(known[name], _strict_bool(known[name], value))
        kwargs.update(overrides)
        cfg = cls(**kwargs)
        cfg.validate()
        return cfg

    def replace(self, **changes: Any) -> RunConfig:
        """Copy with ``changes`` applied, validated."""
        cfg = dataclasses.replace(self, **changes)
        cfg.validate()
        return cfg

    def to_run_config(self) -> dict[str, Any]:
        """Kebab-case dict, the inverse of :meth:`from_run_config`."""
        return {f.name.replace("_", "-"): getattr(self, f.name) for f in fields(self)}

    @property
    def groups(self) -> int:
        """Effective M (from ``group_size`` if set, else ``num_groups``)."""
        if self.group_size > 0:
            return max(1, self.num_partitions // self.group_size)
        return self.num_groups

    def scheme_params(self) -> SchemeParams:
        """The scheme knobs as validated parameter records (``num_groups`` = :attr:`groups`).

        Raises
        ------
        ValueError
            Naming the record field and run-config key of the first invalid knob.
        """
        values = self.to_run_config()
        values["num-groups"] = self.groups
        return SchemeParams.from_keys(values)

    def _check_choices(self) -> None:
        """Every ``Literal``-typed field outside the scheme records holds one of its choices."""
        for f in fields(self):
            if _k(f.name) in _SCHEME_KEYS:
                continue  # validated by its parameter record
            # ``from __future__ import annotations`` makes f.type the alias name.
            alias = globals().get(f.type) if isinstance(f.type, str) else f.type
            choices = get_args(alias)
            value = getattr(self, f.name)
            if choices and value not in choices:
                raise ValueError(
                    f"{_k(f.name)}={value!r} is not one of {', '.join(map(repr, choices))}"
                )

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid key and how to fix it."""
        _check(
            self.strategy in SCHEMES,
            "strategy",
            self.strategy,
            "not one of " + ", ".join(map(repr, SCHEMES)),
        )
        self._check_choices()
        for key, value, alias in (
            ("dataset", self.dataset, Dataset),
            ("model", self.model, ModelName),
        ):
            _check(
                value in get_args(alias) or is_import_path(value),
                key,
                value,
                f"not one of {', '.join(map(repr, get_args(alias)))} nor an import path "
                "'package.module:factory' (docs/user-code.md)",
            )
        _check(self.group_size >= 0, "group-size", self.group_size, ">= 0 (0 = use num-groups)")
        _check(self.convergence_tol >= 0, "convergence-tol", self.convergence_tol, ">= 0")
        self.scheme_params()  # the records validate the scheme knobs (one place)
        check_values(self.to_run_config(), self.groups)  # ranges, in a fixed order (one place)


def _strict_bool(f: dataclasses.Field[Any], value: Any) -> Any:
    """A boolean key takes ``true`` or ``false`` only (TOML booleans, or those words in a
    string): ``'yes'``, ``'1'`` or ``1`` are refused rather than read as true.

    Raises
    ------
    ValueError
        Naming the key and the value.
    """
    words = isinstance(value, str) and value.strip().lower() in ("true", "false")
    if isinstance(f.default, bool) and not isinstance(value, bool) and not words:
        raise ValueError(f"{_k(f.name)}={value!r}: expected true or false")
    return value


def _attributes(cls: type) -> str:
    """A NumPy ``Attributes`` section of ``cls``'s fields, from their defaults and help texts.

    Written from the same metadata as ``--help`` and the run-config keys, so the class's
    docstring lists every knob with its default without a second copy to keep in step.
    """
    lines = ["", "", "Attributes", "----------"]
    for f in fields(cls):
        lines += [f"{f.name} : {f.type}, default {f.default!r}", f"    {f.metadata['doc']}"]
    return "\n".join(lines)


RunConfig.__doc__ = (RunConfig.__doc__ or "") + _attributes(RunConfig)

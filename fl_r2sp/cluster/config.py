"""Configuration of a cluster-mode run: one frozen dataclass, validated before any rank starts.

The launcher (``python -m fl_r2sp.cluster``) builds a :class:`ClusterConfig` from the command
line (:mod:`fl_r2sp.cluster.cli`), calls :meth:`ClusterConfig.validate` and only then
starts the ranks, so bad input (more parameter servers than parameters, an unknown scheme, a
relaxation factor outside [0, 1], a batch size below 1, ...) fails at once with a message that
names the flag. Every rank re-validates the same configuration when it starts (a ``torchrun``
launch skips the launcher).

Units: times in seconds, bandwidth in MB/s with 1 MB = 10^6 bytes.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fl_r2sp.cluster.policies.common.params import PSParams, check_int
from fl_r2sp.cluster.policies.ps.r2sp import R2SPParams

#: Integers travel in float32 message headers, which represent them exactly below 2**24.
HEADER_INT_LIMIT = 2**24
_DEVICE = re.compile(r"^(cpu|cuda|cuda:\d+)$")


@dataclass(frozen=True)
class ClusterConfig:
    """All knobs of a cluster-mode run (defaults in brackets).

    Parameters
    ----------
    workers : int [4]
        N, number of worker ranks.
    servers : int [1]
        S, number of parameter-server ranks; each holds an equal contiguous shard of the
        flattened parameters (S <= number of parameters).
    scheme : PSParams [R2SPParams()]
        The parameter-server scheme's record: its name and knobs (one record class per
        scheme, listed in the scheme table :mod:`fl_r2sp.cluster.schemes`).
    model, dataset : str ["resnet32", "cifar10"]
        Built-in names (:mod:`fl_r2sp.cluster.userjob.catalog`) or the import paths
        ``package.module:factory`` of the user's own factories (the contract:
        :mod:`fl_r2sp.cluster.userjob`).
    loss, evaluate : str ["", ""]
        Import paths of the user's loss and evaluation ("" = cross-entropy, and the built-in
        test accuracy for a built-in dataset).
    data_dir : str [""]
        Folder of the CIFAR-10 files ("" = ``$FL_R2SP_DATA`` or the user cache).
    max_train : int [0]
        Use only ``max_train`` training examples, a seeded class-stratified subset (0 = all).
    batch_size : int [128]
        Initial per-worker batch size |I_0| (tuning may change it later).
    lr : float [0.1]
        Learning rate eta; a push of batch size b is applied as u = -(b/|I_0|)·eta·g.
    momentum : float [0.0]
        Momentum of the update at each parameter server, in [0, 1).
    max_iterations : int [100]
        Iterations per worker; the run also stops on convergence.
    loss_threshold : float [0.0]
        Convergence threshold on the training loss (0 = off).
    convergence_window : int [10]
        Consecutive iterations the loss must stay below the threshold.
    server_bandwidth_mb_s : float [0.0]
        Token-bucket cap on each PS's ingress and egress in MB/s (0 = unlimited).
    chunk_kb : int [256]
        Chunk size of throttled transfers in KiB (unthrottled messages go whole).
    compute_multipliers : tuple of float [()]
        Per-worker slowdown m >= 1: the worker sleeps (m - 1) x its compute time after
        computing (empty = all 1).
    iteration_delays : tuple of float [()]
        Per-worker delay in seconds injected into every iteration (empty = none).
    compute_model : str ["real"]
        "real": compute times are what this machine gives; "emulated": each worker's compute
        lasts its measured per-sample cost × batch × multiplier, served by sleeping
        (:mod:`fl_r2sp.cluster.runtime.ps.compute_model`; PS family only; OSP refuses it: its
        worker runs its own loop on real compute).
    sample_cost_s : float or None [None]
        The emulated compute's base per-sample cost in seconds, shared by every worker;
        None ("auto") measures it once per run (all workers together, median). Only with
        ``compute_model = "emulated"``.
    scripted_compute : tuple of tuple of float [()]
        Per-worker, per-iteration compute times: the worker sleeps them instead of training
        and pushes zero gradients (for the runtime-versus-twin test; empty = train).
    devices : tuple of str [("cpu",)]
        Worker devices, assigned round-robin: "cpu", "cuda" (GPU ``local_rank % count``) or
        "cuda:i". Several workers may share one GPU.
    threads : int [1]
        torch intra-op threads per rank.
    seed : int [0]
        Seed of the initial weights, the generated data and every worker's batch stream.
    timeout_s : float [300.0]
        Longest wait of any single blocking call (store waits, gloo send/recv); a rank
        silent for longer counts as lost. Must exceed the longest iteration including
        waiting for permission.
    run_timeout_s : float [3600.0]
        Wall-clock limit of the whole run; every rank exits when it passes.
    run_dir : str ["runs/cluster"]
        Parent folder of the run directory.
    eval_samples : int [10000]
        Test examples evaluated at the end (0 = no evaluation).
    progress_s : float [5.0]
        Seconds between progress lines of the coordinator (0 = quiet).
    plots : bool [True]
        Draw the Gantt chart and the inter-update gap CDF into the run directory.
    """

    workers: int = 4
    servers: int = 1
    scheme: PSParams = field(default_factory=R2SPParams)
    model: str = "resnet32"
    dataset: str = "cifar10"
    loss: str = ""
    evaluate: str = ""
    data_dir: str = ""
    max_train: int = 0
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.0
    max_iterations: int = 100
    loss_threshold: float = 0.0
    convergence_window: int = 10
    server_bandwidth_mb_s: float = 0.0
    chunk_kb: int = 256
    compute_multipliers: tuple[float, ...] = ()
    iteration_delays: tuple[float, ...] = ()
    compute_model: str = "real"
    sample_cost_s: float | None = None
    scripted_compute: tuple[tuple[float, ...], ...] = ()
    devices: tuple[str, ...] = ("cpu",)
    threads: int = 1
    seed: int = 0
    timeout_s: float = 300.0
    run_timeout_s: float = 3600.0
    run_dir: str = "runs/cluster"
    eval_samples: int = 10000
    progress_s: float = 5.0
    plots: bool = True

    @property
    def world_size(self) -> int:
        """S + N ranks: parameter servers first, then workers (OSP-C: N, each PS in the
        process of a worker)."""
        return self.workers if self.scheme.colocated else self.servers + self.workers

    @property
    def scheme_name(self) -> str:
        """The ``--scheme`` this run plays (the scheme table's key)."""
        return self.scheme.scheme

    def validate(self, check_model: bool = True) -> ClusterConfig:
        """Check every field; return ``self`` so calls chain.

        Parameters
        ----------
        check_model : bool, default True
            Also build the model once to check that S <= its parameter count.

        Raises
        ------
        ValueError
            Naming the field, its value and what is allowed.
        """
        self._check_sizes()
        self.scheme.validate()
        self._check_numbers()
        self._check_per_worker()
        self.scheme.check_job(self.workers, self.servers, self.momentum)
        if self.compute_model == "emulated" and not self.scheme.emulated_compute:
            raise ValueError(
                f"--compute-model emulated is not built for --scheme {self.scheme_name} (its "
                "worker runs its own loop on real compute times); use --compute-model real"
            )
        bad = [d for d in self.devices if not _DEVICE.match(d)]
        if not self.devices or bad:
            raise ValueError(f"devices must be cpu, cuda or cuda:<i>, got {list(self.devices)}")
        self._check_job_paths()
        if check_model:
            count = self.parameter_count()
            if self.servers > count:
                raise ValueError(
                    f"servers S={self.servers} exceeds the {count} parameters of model "
                    f"{self.model!r}: every parameter server needs a non-empty shard"
                )
        return self

    def _check_job_paths(self) -> None:
        """Names known and paths well formed (torch-free; the paths resolve in
        :func:`~fl_r2sp.cluster.userjob.job.check_job`, before any rank starts)."""
        from fl_r2sp.cluster.userjob.catalog import dataset_factory_path, model_factory_path
        from fl_r2sp.importpath import check_form

        check_form(model_factory_path(self.model), "model")
        check_form(dataset_factory_path(self.dataset, self.model), "dataset")
        for what in ("loss", "evaluate"):
            if getattr(self, what):
                check_form(getattr(self, what), what)

    def caveats(self) -> list[str]:
        """Warnings about settings a user may mean although they turn the scheme into another:
        one worker (every scheme is plain SGD), and the scheme record's own
        (:meth:`~fl_r2sp.cluster.policies.common.params.PSParams.caveats`)."""
        out = self.scheme.caveats(self.workers)
        if self.workers == 1:
            out.insert(0, "one worker: every scheme is plain single-worker SGD")
        return out

    def parameter_count(self) -> int:
        """Number of trainable parameters of the configured model (builds it once)."""
        from fl_r2sp.cluster.models import param_count
        from fl_r2sp.cluster.userjob.job import TrainingJob

        return param_count(TrainingJob(self).build_model())

    def _check_sizes(self) -> None:
        for name in (
            "workers",
            "servers",
            "batch_size",
            "max_iterations",
            "convergence_window",
            "chunk_kb",
            "threads",
        ):
            check_int(name, getattr(self, name), 1)
        for name in ("max_train", "seed", "eval_samples"):
            check_int(name, getattr(self, name), 0)
        for name in ("workers", "batch_size", "max_iterations"):
            if getattr(self, name) >= HEADER_INT_LIMIT:
                raise ValueError(f"{name} must be < 2**24 (float32 message headers)")

    def _check_numbers(self) -> None:
        _check_float("lr", self.lr, low=0.0, low_open=True)
        _check_float("momentum", self.momentum, low=0.0, high=1.0, high_open=True)
        _check_float("loss_threshold", self.loss_threshold, low=0.0)
        _check_float("server_bandwidth_mb_s", self.server_bandwidth_mb_s, low=0.0)
        _check_float("timeout_s", self.timeout_s, low=0.0, low_open=True)
        _check_float("run_timeout_s", self.run_timeout_s, low=0.0, low_open=True)
        _check_float("progress_s", self.progress_s, low=0.0)
        if not isinstance(self.plots, bool):
            raise ValueError(f"plots must be a bool, got {self.plots!r}")

    def _check_per_worker(self) -> None:
        for name, low in (("compute_multipliers", 1.0), ("iteration_delays", 0.0)):
            values = getattr(self, name)
            if values and len(values) != self.workers:
                raise ValueError(
                    f"{name} needs one value per worker ({self.workers}), got {len(values)}"
                )
            for v in values:
                _check_float(name, v, low=low)
        if self.compute_model not in ("real", "emulated"):
            raise ValueError(
                f"unknown compute_model {self.compute_model!r}; choose real or emulated"
            )
        if self.sample_cost_s is not None:
            _check_float("sample_cost_s", self.sample_cost_s, low=0.0, low_open=True)
            if self.compute_model != "emulated":
                raise ValueError("sample_cost_s (--sample-cost) sets the emulated devices' "
                                 "speed: it needs compute_model emulated")  # fmt: skip
        if self.scripted_compute:
            if len(self.scripted_compute) != self.workers:
                raise ValueError(
                    f"scripted_compute needs one list per worker ({self.workers}), "
                    f"got {len(self.scripted_compute)}"
                )
            for w, times in enumerate(self.scripted_compute):
                if len(times) < self.max_iterations:
                    raise ValueError(
                        f"scripted_compute[{w}] has {len(times)} times for "
                        f"{self.max_iterations} iterations"
                    )
                for v in times:
                    _check_float("scripted_compute", v, low=0.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (the scheme as a nested dict); inverse of :meth:`from_dict`."""
        out = dataclasses.asdict(self)
        out["scheme"] = {k: json_float(v) for k, v in out["scheme"].items()}
        return out

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], records: Mapping[str, type[PSParams]] | None = None
    ) -> ClusterConfig:
        """Rebuild a config from :meth:`to_dict`'s output (unknown keys raise).

        Parameters
        ----------
        data : dict
            :meth:`to_dict`'s output.
        records : mapping or None, default None
            Scheme name -> record class (the scheme table's, through
            :func:`fl_r2sp.cluster.schemes.config_from_dict`); needed when ``data`` holds a
            scheme, which then must be one of them.

        Raises
        ------
        ValueError
            On an unknown key or scheme.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown cluster config keys {unknown}")
        kwargs = dict(data)
        if isinstance(kwargs.get("scheme"), dict):
            knobs = {RENAMED_KNOBS.get(k, k): unjson_float(v) for k, v in kwargs["scheme"].items()}
            record = (records or {}).get(knobs.get("scheme", ""))
            if record is None:
                known_schemes = sorted(records or {})
                raise ValueError(f"unknown scheme {knobs.get('scheme')!r} in {known_schemes}")
            kwargs["scheme"] = record(**knobs)
        for name in ("compute_multipliers", "iteration_delays", "devices"):
            if name in kwargs:
                kwargs[name] = tuple(kwargs[name])
        if "scripted_compute" in kwargs:
            kwargs["scripted_compute"] = tuple(tuple(t) for t in kwargs["scripted_compute"])
        return cls(**kwargs)


#: Scheme knobs under an earlier name -> their name now, so run folders written before a rename
#: still load (``config.json`` of a cluster run holds the scheme's knobs by name).
RENAMED_KNOBS: Mapping[str, str] = MappingProxyType({"gap_factor": "worker_gap_factor"})


def num_classes_of(dataset: str) -> int:
    """Model output size for ``dataset``: 10 classes, or the token vocabulary of seq2seq sets."""
    from fl_r2sp.cluster.data import SEQ_VOCAB

    return SEQ_VOCAB if dataset in ("copy", "reverse") else 10


def _check_float(
    name: str,
    value: object,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        v = float(value)  # type: ignore[arg-type]
        ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    if not ok:
        lo = "(" if low_open else "["
        hi = ")" if high_open or high == math.inf else "]"
        raise ValueError(f"{name} must be a finite number in {lo}{low}, {high}{hi}, got {value!r}")


def json_float(v: Any) -> Any:
    """``inf`` as the string "inf" (JSON has no infinity; SAFA's default deadline is inf)."""
    return "inf" if isinstance(v, float) and math.isinf(v) else v


def unjson_float(v: Any) -> Any:
    """Inverse of :func:`json_float`."""
    return math.inf if v == "inf" else v

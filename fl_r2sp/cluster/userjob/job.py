"""A run's training job as the ranks use it: the model, a worker's batches, the loss, the
evaluation, each from the import path of its factory (the contract: :mod:`..userjob`).

Built-in names are paths too (:mod:`.catalog`), so a built-in run and a user's run take this
one path. :func:`check_job` holds a job to the contract before any rank starts; every
violation raises :class:`~fl_r2sp.importpath.ImportPathError` naming the path at fault.
"""

from __future__ import annotations

import base64
import inspect
import io
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

import torch
from torch import nn

from fl_r2sp.cluster.data import BatchStream
from fl_r2sp.cluster.userjob.batches import IterableStream, is_map_style, stream_of
from fl_r2sp.cluster.userjob.catalog import (
    DEFAULT_LOSS,
    builtin_dataset_name,
    builtin_model_name,
    dataset_factory_path,
    model_factory_path,
)
from fl_r2sp.importpath import ImportPathError, resolve


class JobSettings(Protocol):
    """What a job reads of a run's :class:`~fl_r2sp.cluster.config.ClusterConfig` (a protocol,
    since the config builds a job to count the model's parameters)."""

    @property
    def model(self) -> str: ...
    @property
    def dataset(self) -> str: ...
    @property
    def loss(self) -> str: ...
    @property
    def evaluate(self) -> str: ...
    @property
    def data_dir(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def workers(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def max_train(self) -> int: ...
    @property
    def eval_samples(self) -> int: ...
    @property
    def scheme(self) -> Any: ...


__all__ = [
    "JobSettings",
    "TrainingJob",
    "buffers_of",
    "call_declared",
    "check_job",
    "decode_buffers",
    "encode_buffers",
]

#: Examples of the batch :func:`check_job` runs through the model and the loss.
CHECK_BATCH = 2


def call_declared(fn: Callable[..., Any], *args: Any, **offered: Any) -> Any:
    """``fn(*args, **k)`` with the keywords of ``offered`` that ``fn`` declares (all of them
    if it takes ``**kwargs``), so that a factory names only what it needs."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature: offer nothing
        return fn(*args)
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return fn(*args, **offered)
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return fn(*args, **{k: v for k, v in offered.items() if k in names})


class TrainingJob:
    """The model, data, loss and evaluation of the run ``cfg`` (paths resolved lazily).

    Parameters
    ----------
    cfg : JobSettings
        A :class:`~fl_r2sp.cluster.config.ClusterConfig`: ``model``, ``dataset``, ``loss``,
        ``evaluate``, ``data_dir``, ``seed``, ``workers``, ``batch_size``, ``max_train`` and
        ``eval_samples`` are used (and ``scheme``'s ``tuning`` by :func:`check_job`).
    """

    def __init__(self, cfg: JobSettings) -> None:
        self.cfg = cfg
        self.model_path = model_factory_path(cfg.model)
        self.dataset_path = dataset_factory_path(cfg.dataset, cfg.model)
        self.loss_path = cfg.loss or DEFAULT_LOSS
        self.builtin_dataset = builtin_dataset_name(cfg.dataset, cfg.model)
        self._loss: Callable[..., Any] | None = None
        self._test: Any = None

    @property
    def evaluates(self) -> bool:
        """Whether :meth:`evaluate` has anything to do (a user's evaluation, or a built-in
        dataset's test split; ``eval_samples`` 0 turns both off)."""
        builtin = self.builtin_dataset is not None
        return self.cfg.eval_samples > 0 and (bool(self.cfg.evaluate) or builtin)

    def build_model(self) -> nn.Module:
        """A fresh CPU model: the factory called with torch's generator seeded with ``seed``
        (restored afterwards), so every rank builds the same initial weights."""
        factory = resolve(self.model_path, "model")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.cfg.seed)
            model = call_declared(factory, seed=self.cfg.seed)
        if not isinstance(model, nn.Module):
            raise ImportPathError("model", self.model_path, f"returned a {type(model).__name__}"
                                  ", not a torch.nn.Module")  # fmt: skip
        if not any(p.requires_grad for p in model.parameters()):
            raise ImportPathError("model", self.model_path, "has no trainable parameters")
        return model.float()

    def with_params(self, flat: torch.Tensor) -> nn.Module:
        """:meth:`build_model` with its trainable parameters set to ``flat`` (CPU)."""
        model = self.build_model()
        params = [p for p in model.parameters() if p.requires_grad]
        nn.utils.vector_to_parameters(flat.detach().cpu(), params)
        return model

    def state_dict(
        self, flat: torch.Tensor, buffers: Mapping[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """The ``state_dict`` of :meth:`with_params`: loads into the user's module.

        Schemes synchronise the trainable parameters only; buffers (BatchNorm statistics) are
        each worker's own. ``buffers`` (one worker's, :func:`buffers_of`) replace the initial
        ones where given.
        """
        out = {k: v.detach().clone() for k, v in self.with_params(flat).state_dict().items()}
        for name, value in (buffers or {}).items():
            if name in out:
                out[name] = value.detach().cpu().clone()
        return out

    def train_data(self, worker: int) -> Any:
        """What the dataset factory returns for ``worker`` (rank = worker index, world_size =
        the number of workers)."""
        factory = resolve(self.dataset_path, "dataset")
        cfg = self.cfg
        offered = {"seed": cfg.seed, "rank": worker, "world_size": cfg.workers}
        return call_declared(factory, **offered, data_dir=cfg.data_dir or None)

    def stream(self, worker: int, stream_seed: int) -> BatchStream | IterableStream:
        """Worker ``worker``'s batches (permutations drawn from ``stream_seed``)."""
        data = self.train_data(worker)
        try:
            return stream_of(data, self.cfg.batch_size, stream_seed, self.cfg.max_train,
                             self.cfg.seed)  # fmt: skip
        except (TypeError, ValueError) as exc:
            raise ImportPathError("dataset", self.dataset_path, str(exc)) from exc

    def loss_fn(self) -> Callable[..., Any]:
        """The loss ``fn(outputs, targets)`` (a class named by the path is instantiated once,
        without arguments, e.g. ``torch.nn:CrossEntropyLoss``)."""
        if self._loss is None:
            fn = resolve(self.loss_path, "loss")
            self._loss = cast(Callable[..., Any], fn() if inspect.isclass(fn) else fn)
        return self._loss

    def loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``loss(model(x), y)`` with the job's loss (default: cross-entropy)."""
        out: torch.Tensor = self.loss_fn()(model(x), y)
        return out

    @torch.no_grad()
    def evaluate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """The evaluation of ``model`` (on ``device``, in eval mode; train mode after).

        The user's ``evaluate`` if given (called with the keywords it declares of ``device``,
        ``seed``, ``data_dir``); else, for a built-in dataset, accuracy and loss on
        ``eval_samples`` test examples; else nothing.
        """
        if not self.evaluates:
            return {}
        if self.cfg.evaluate:
            model.eval()
            try:
                fn = resolve(self.cfg.evaluate, "evaluate")
                where = {"seed": self.cfg.seed, "data_dir": self.cfg.data_dir or None}
                out = call_declared(fn, model, device=device, **where)
            finally:
                model.train()
            return _metrics(out, self.cfg.evaluate)
        from fl_r2sp.cluster.userjob.builtin import evaluate_on_test_split

        test = self._builtin_test()
        if test is None:
            return {}
        cfg = self.cfg
        return evaluate_on_test_split(model, test.x, test.y, cfg.eval_samples, device, cfg.seed)

    def _builtin_test(self) -> Any:
        if self._test is None:
            from fl_r2sp.cluster.data import make_dataset

            name = builtin_model_name(self.cfg.model) or ""
            self._test = make_dataset(name, str(self.builtin_dataset), self.cfg.data_dir or None,
                                      self.cfg.seed, include_test=True).test  # fmt: skip
        return self._test


def buffers_of(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s buffers by state-dict name, on the CPU."""
    return {name: b.detach().cpu().clone() for name, b in model.named_buffers()}


def encode_buffers(model: nn.Module) -> str:
    """:func:`buffers_of` as text for the store's JSON values ("" if it has none)."""
    found = buffers_of(model)
    if not found:
        return ""
    out = io.BytesIO()
    torch.save(found, out)
    return base64.b64encode(out.getvalue()).decode("ascii")


def decode_buffers(text: str | None) -> dict[str, torch.Tensor]:
    """Inverse of :func:`encode_buffers` (empty for "" or None)."""
    if not text:
        return {}
    raw = io.BytesIO(base64.b64decode(text))
    return dict(torch.load(raw, weights_only=True))


def _metrics(out: object, path: str) -> dict[str, float]:
    if not isinstance(out, Mapping):
        raise ImportPathError("evaluate", path, f"returned a {type(out).__name__}, not a "
                              "mapping of metric name -> number")  # fmt: skip
    try:
        return {str(k): float(v) for k, v in out.items()}
    except (TypeError, ValueError) as exc:
        raise ImportPathError("evaluate", path, f"returned a metric that is no number: {exc}"
                              ) from exc  # fmt: skip


def check_job(cfg: JobSettings) -> None:
    """Hold the job of ``cfg`` to the contract before any rank starts.

    Builds the model, worker 0's data and one batch of :data:`CHECK_BATCH` examples, runs
    the model and the loss on it, and resolves the evaluation's path. A scheme that resizes
    batches (R²SP's ``tuning``) needs a map-style dataset.

    Raises
    ------
    ImportPathError
        Naming the path and what was wrong: not importable, no such attribute, not callable,
        a wrong return type, samples that do not fit the model, a loss that is no scalar.
    """
    job = TrainingJob(cfg)
    model = job.build_model()
    data = job.train_data(0)
    tuning = str(getattr(cfg.scheme, "tuning", "none"))
    if tuning != "none" and not is_map_style(data):
        raise ImportPathError("dataset", job.dataset_path, f"returned a {type(data).__name__} "
                              f"(an iterator), but --tuning {tuning} resizes batches: return a "
                              "map-style dataset (__len__ and __getitem__)")  # fmt: skip
    try:
        stream = stream_of(data, min(CHECK_BATCH, cfg.batch_size), 0)
        x, y = stream.take()
    except Exception as exc:
        raise ImportPathError("dataset", job.dataset_path, f"cannot draw a batch: {exc}") from exc
    _check_fit(job, model, x, y)
    if cfg.evaluate:
        resolve(cfg.evaluate, "evaluate")


def _check_fit(job: TrainingJob, model: nn.Module, x: Any, y: Any) -> None:
    """Run ``model`` and the loss on one batch; name the path at fault if they fail."""
    try:
        out = model(x)
    except Exception as exc:
        why = f"its samples do not fit model {job.model_path!r}: {type(exc).__name__}: {exc}"
        raise ImportPathError("dataset", job.dataset_path, why) from exc
    fn = job.loss_fn()
    try:
        loss = fn(out, y)
    except Exception as exc:
        why = f"fails on the model's outputs and the targets: {type(exc).__name__}: {exc}"
        raise ImportPathError("loss", job.loss_path, why) from exc
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
        got = f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else ""
        got = got or f"a {type(loss).__name__}"
        why = f"must return a scalar tensor that depends on the model's parameters, got {got}"
        raise ImportPathError("loss", job.loss_path, why)

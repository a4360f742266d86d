"""Config pieces shared by the families without a parameter server (every rank a worker).

A serverless family's run config (:class:`~.reduce_config.ReduceRunConfig`,
:class:`~.dssync_config.DSSyncRunConfig`) is a frozen dataclass that wraps a
:class:`~fl_r2sp.cluster.config.ClusterConfig` in its ``base`` field and crosses process
boundaries as a dict marked with a family key (the rank entry dispatches on it). This module
holds what those configs do alike: the world size and time limit read off ``base``
(:class:`PeerRunMixin`), the marked dict (:func:`run_to_dict`), its inverse's key check and
``base`` rebuild (:func:`run_kwargs`), and the dispatch test (:func:`is_marked_run`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fl_r2sp.cluster.config import ClusterConfig


class PeerRunMixin:
    """``world_size`` and ``run_timeout_s`` of a run whose every rank is a worker.

    The dataclass that mixes this in defines ``base``.
    """

    base: ClusterConfig

    @property
    def world_size(self) -> int:
        """One rank per worker (no parameter server)."""
        return self.base.workers

    @property
    def run_timeout_s(self) -> float:
        """The base config's wall limit of the run."""
        return self.base.run_timeout_s


def run_to_dict(cfg: PeerRunMixin, mark_key: str) -> dict[str, Any]:
    """The dataclass ``cfg`` as a dict: every field, ``base`` as its own dict, and
    ``mark_key: True`` last (callers then replace other fields' values in place, which keeps
    the key order).

    Raises
    ------
    TypeError
        If ``cfg`` is not a dataclass instance.
    """
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise TypeError(f"expected a dataclass instance, got {type(cfg).__name__}")
    out = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    out["base"] = out["base"].to_dict()
    out[mark_key] = True
    return out


def run_kwargs(cls: type, data: dict[str, Any], mark_key: str, label: str) -> dict[str, Any]:
    """Constructor arguments of ``cls`` from :func:`run_to_dict`'s output: the mark dropped,
    ``base`` rebuilt as a :class:`ClusterConfig` (if a dict); the other fields as given.

    Raises
    ------
    ValueError
        On a key that is not a field of ``cls``, as ``unknown <label> run config keys [...]``.
    """
    kwargs = {k: v for k, v in data.items() if k != mark_key}
    unknown = sorted(set(kwargs) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"unknown {label} run config keys {unknown}")
    if isinstance(kwargs.get("base"), dict):
        kwargs["base"] = ClusterConfig.from_dict(kwargs["base"])
    return kwargs


def is_marked_run(config: object, cls: type, mark_key: str) -> bool:
    """Whether ``config`` is a ``cls`` or a dict carrying a true ``mark_key``."""
    return isinstance(config, cls) or (isinstance(config, dict) and bool(config.get(mark_key)))

"""Config pieces shared by the families without a parameter server (every rank a worker).

A serverless family's run config (:class:`~fl_r2sp.cluster.runtime.reduce.config.ReduceRunConfig`,
:class:`~fl_r2sp.cluster.runtime.dssync.config.DSSyncRunConfig`) is a frozen dataclass that
wraps a :class:`~fl_r2sp.cluster.config.ClusterConfig` in its ``base`` field. This module holds
what those configs do alike: the world size, time limit and scheme name read off the config
(:class:`PeerRunMixin`), the dict form written to ``config.json`` (:func:`run_to_dict`), and
its inverse's key check and ``base`` rebuild (:func:`run_kwargs`). ``base``'s parameter-server
scheme record plays no part in a serverless run, so the dict leaves it out.
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


def run_to_dict(cfg: PeerRunMixin) -> dict[str, Any]:
    """The dataclass ``cfg`` as a dict: every field, ``base`` as its own dict without its
    (unused) parameter-server scheme (callers then replace other fields' values in place,
    which keeps the key order).

    Raises
    ------
    TypeError
        If ``cfg`` is not a dataclass instance.
    """
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise TypeError(f"expected a dataclass instance, got {type(cfg).__name__}")
    out = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    out["base"] = {k: v for k, v in out["base"].to_dict().items() if k != "scheme"}
    return out


def run_kwargs(cls: type, data: dict[str, Any], label: str) -> dict[str, Any]:
    """Constructor arguments of ``cls`` from :func:`run_to_dict`'s output: ``base`` rebuilt as
    a :class:`ClusterConfig` (if a dict; its scheme left at the default); the other fields as
    given.

    Raises
    ------
    ValueError
        On a key that is not a field of ``cls``, as ``unknown <label> run config keys [...]``.
    """
    kwargs = dict(data)
    unknown = sorted(set(kwargs) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"unknown {label} run config keys {unknown}")
    if isinstance(kwargs.get("base"), dict):
        base = {k: v for k, v in kwargs["base"].items() if k != "scheme"}
        kwargs["base"] = ClusterConfig.from_dict(base)
    return kwargs

"""Range checks and TOML coercion of a run configuration's values (not its scheme knobs).

:class:`~fl_r2sp.fl.config.RunConfig` keeps its fields and their documentation; this module
checks the non-scheme values it holds, given as the kebab-case mapping of
:meth:`~fl_r2sp.fl.config.RunConfig.to_run_config` (the scheme knobs are validated by their
parameter records, :mod:`fl_r2sp.fl.policies.params`). The checks run in a fixed order and
the first failing one raises ``ValueError`` naming the key, the value and how to fix it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


def key_of(name: str) -> str:
    """Run-config key of field ``name`` (``num_groups`` -> ``num-groups``)."""
    return name.replace("_", "-")


def check(ok: bool, key: str, value: Any, how: str) -> None:
    """Raise ``ValueError`` naming ``key``, ``value`` and ``how`` unless ``ok``."""
    if not ok:
        raise ValueError(f"invalid run config {key}={value!r}: {how}")


def coerce(f: dataclasses.Field[Any], value: Any) -> Any:
    """Coerce Flower's TOML scalars to the field's type (int -> float etc.).

    The type is the field default's: ``bool`` (also ``"true"``/``"1"``/``"yes"`` and
    their negatives), ``int`` (an integral number), ``float``, else ``str``.
    """
    default = f.default
    if isinstance(default, bool):
        if isinstance(value, str):
            low = value.lower()
            if low in ("true", "1", "yes"):
                return True
            if low in ("false", "0", "no"):
                return False
        if not isinstance(value, bool):
            raise ValueError(f"{key_of(f.name)}={value!r}: expected true or false")
        return value
    if isinstance(default, int):
        try:
            whole = not isinstance(value, bool) and float(value).is_integer()
        except (TypeError, ValueError):  # 'abc', or a string Flower passed through
            whole = False
        if not whole:
            raise ValueError(f"{key_of(f.name)}={value!r}: expected an integer")
        return value if isinstance(value, int) else int(float(value))
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key_of(f.name)}={value!r}: expected a number") from None
    return str(value)


def check_values(v: Mapping[str, Any], groups: int) -> None:
    """Check every non-scheme value of a run config, in a fixed order.

    Parameters
    ----------
    v : mapping of str to Any
        The run config's kebab-case values (``RunConfig.to_run_config()``).
    groups : int
        The effective number of groups M (``RunConfig.groups``).

    Raises
    ------
    ValueError
        Naming the first invalid key, its value and how to fix it.
    """
    _check_data(v, groups)
    _check_runtime(v)
    _check_health(v)


def _check_data(v: Mapping[str, Any], groups: int) -> None:
    """Clients, groups, partitioning and local training."""
    n = v["num-partitions"]
    check(n >= 1, "num-partitions", n, "need >= 1 client")
    check(groups <= n, "num-groups", groups, f"more groups than clients ({n}); lower num-groups")
    if v["group-size"] > 0:
        check(
            v["group-size"] <= n,
            "group-size",
            v["group-size"],
            f"larger than the number of clients ({n})",
        )
    check(v["alpha"] > 0, "alpha", v["alpha"], "Dirichlet alpha must be > 0")
    check(v["outlier-alpha"] > 0, "outlier-alpha", v["outlier-alpha"], "must be > 0")
    fraction = v["outlier-fraction"]
    check(0 <= fraction < 1, "outlier-fraction", fraction, "must lie in [0, 1)")
    for key in ("samples-per-client", "max-train-samples"):
        check(v[key] >= 0, key, v[key], ">= 0")
    for key in ("local-iterations", "batch-size"):
        check(v[key] >= 1, key, v[key], ">= 1")
    check(v["lr"] > 0, "lr", v["lr"], "learning rate must be > 0")
    for key in ("momentum", "weight-decay"):
        check(v[key] >= 0, key, v[key], ">= 0")


def _check_runtime(v: Mapping[str, Any]) -> None:
    """Execution, stopping, timeouts and checkpoints."""
    check(v["torch-threads"] >= 1, "torch-threads", v["torch-threads"], ">= 1")
    workers = v["executor-workers"]
    check(workers >= 0, "executor-workers", workers, ">= 0 (0 = one per core)")
    check(v["executor-stack"] >= 0, "executor-stack", v["executor-stack"], ">= 0 (0 = auto)")
    check(v["max-updates"] >= 0, "max-updates", v["max-updates"], ">= 0 (0 = no limit)")
    check(v["time-budget"] >= 0, "time-budget", v["time-budget"], ">= 0 (0 = none)")
    window = v["convergence-window"]
    check(window >= 0, "convergence-window", window, ">= 0")
    check(v["eval-every"] >= 1, "eval-every", v["eval-every"], ">= 1")
    fed = v["federated-eval-every"]
    check(fed >= -1, "federated-eval-every", fed, ">= -1 (-1 = never, 0 = final model only)")
    check(v["job-timeout"] > 0, "job-timeout", v["job-timeout"], "> 0")
    for key in ("node-wait", "node-grace", "resend-backoff", "grid-retry-time"):
        check(v[key] >= 0, key, v[key], ">= 0")
    every = v["checkpoint-every"]
    check(every >= 0, "checkpoint-every", every, ">= 0 (0 = off)")
    check(
        v["strategy"] != "fedavg" or not (every or v["resume-from"]),
        "checkpoint-every",
        every,
        "stock fedavg runs Flower's own loop, which has no checkpoints; set it to 0",
    )


def _check_health(v: Mapping[str, Any]) -> None:
    """Attacks, update admission, run health and the stop condition."""
    share = v["attack-fraction"]
    check(0 <= share <= 1, "attack-fraction", share, "must lie in [0, 1]")
    factor = v["admission-norm-factor"]
    check(factor >= 0, "admission-norm-factor", factor, ">= 0 (0 = no norm check)")
    check(v["admission-warmup"] >= 0, "admission-warmup", v["admission-warmup"], ">= 0")
    check(v["admission-window"] >= 1, "admission-window", v["admission-window"], ">= 1")
    lost = v["max-lost-share"]
    check(0 <= lost <= 1, "max-lost-share", lost, "must lie in [0, 1]")
    share = v["max-rejected-share"]
    check(0 <= share <= 1, "max-rejected-share", share, "must lie in [0, 1] (1 = off)")
    for key in ("max-update-gap", "job-timeout-factor"):
        check(v[key] >= 0, key, v[key], ">= 0 (0 = off)")
    check(
        v["max-updates"] > 0 or v["time-budget"] > 0 or v["convergence-window"] > 0,
        "max-updates",
        v["max-updates"],
        "no stop condition: set max-updates, time-budget or convergence-window",
    )

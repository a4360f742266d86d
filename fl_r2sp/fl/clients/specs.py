"""The spec keys of a run config, parsed as the run will parse them, before anything starts.

``attack``, ``delay``, ``dropout``, ``device`` and ``network`` hold small specification
strings (``lognormal(mu=-2,sigma=1)``, ``sign-flip(ids=0;1)``, ...) whose parsers live with the
clients and the emulation. :func:`check_specs` runs each parser once and, on a fault, raises a
``ValueError`` that names the key and its value: the pre-deployment check
(:mod:`fl_r2sp.fl.flower.run_config_check`) and the in-process runner
(:func:`fl_r2sp.fl.server.runner.run`) both call it, so a bad spec reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from fl_r2sp.emulation.availability import make_availability
from fl_r2sp.emulation.delays import make_delay
from fl_r2sp.emulation.devices import make_device_model
from fl_r2sp.emulation.profiles import get_profile
from fl_r2sp.fl.clients.attacks import parse_attack
from fl_r2sp.fl.config import RunConfig

__all__ = ["SPECS", "check_specs"]

#: Spec keys (RunConfig field names) and the parser that must accept their value.
SPECS: dict[str, Callable[[str], object]] = {
    "attack": parse_attack,
    "delay": make_delay,
    "dropout": make_availability,
    "device": lambda spec: make_device_model(spec, 1.0),
    "network": get_profile,
}


def check_specs(cfg: RunConfig) -> None:
    """Parse every spec key of ``cfg`` and check the attack's client ids.

    Raises
    ------
    ValueError
        ``invalid run config KEY=VALUE: why`` for the first spec that does not parse, or for
        attack client ids outside ``0 .. num-partitions - 1``.
    """
    for key, parse in SPECS.items():
        value = getattr(cfg, key)
        try:
            parse(value)
        except (ValueError, FileNotFoundError) as exc:
            text = str(exc)  # the attack parser names its key already
            if not text.startswith(f"invalid run config {key}"):
                text = f"invalid run config {key}={value!r}: {text}"
            raise ValueError(text) from None
    n = cfg.num_partitions
    for term in parse_attack(cfg.attack):
        bad = sorted(i for i in term.ids or () if not 0 <= i < n)
        if bad:
            raise ValueError(
                f"invalid run config attack={cfg.attack!r}: client ids {bad} are "
                f"outside 0..{n - 1} (num-partitions={n})"
            )

"""Check a run config before Flower sees it, and again as the ServerApp's first act.

Flower refuses an unknown ``--run-config`` key with "[code: 15] Invalid run configuration."
and no name, and passes a value of the wrong type through to the app. The scripts that
submit runs (``scripts/deploy_local.py``, ``scripts/chaos.py``, ``scripts/main.sh`` through
``python -m fl_r2sp.fl.flower.run_config_check``) therefore parse the overrides the way ``flwr
run`` does and check them here first; the ServerApp calls :func:`check_run_config` on the
config Flower hands it, for runs submitted by hand. A failure raises ``ValueError`` naming
the key: an unknown key with the closest accepted one and the list of accepted keys, a value
of the wrong type with the expected type, a value outside its choices with the choices, and
the spec keys (``attack``, ``delay``, ``dropout``, ``device``, ``network``) parsed as the
clients and the emulation will parse them, a ``node-manifest`` read, and a user's ``model`` /
``dataset`` import path resolved and checked against its contract (:mod:`fl_r2sp.fl.user_code`).
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flwr.common.config import parse_config_args

from fl_r2sp.fl.clients.specs import check_specs
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.flower.node_manifest import read_manifest
from fl_r2sp.fl.user_code import check_user_code

#: ``flwr run``'s own pattern of one ``key=value`` pair (``flwr.common.config``): the text it
#: leaves unmatched is dropped there without a word.
_PAIR = re.compile(r"(\S+?)=(\'[^\']*\'|\"[^\"]*\"|\S+)")


def malformed_tokens(text: str) -> list[str]:
    """The words of ``text`` that are not part of a well-formed ``key=value`` pair (``flwr
    run`` would silently drop them: ``"num-groups= 4"`` gives ``['num-groups=', '4']``)."""
    return _PAIR.sub(" ", text).split()


def parse_overrides(text: str) -> dict[str, Any]:
    """``key=value ...`` as ``flwr run --run-config`` reads it (TOML values), except that a
    token which is not a well-formed pair is refused instead of dropped.

    Raises
    ------
    ValueError
        If the text is not ``key=value`` pairs with TOML values, naming the first bad token.
    """
    bad = malformed_tokens(text)
    if bad:
        raise ValueError(f"--run-config {text!r}: {bad[0]!r} is not a key=value pair (write "
                         "key=value with no spaces around '=', e.g. num-groups=4; flwr run "
                         "would silently drop it)")  # fmt: skip
    try:
        return dict(parse_config_args([text]))
    except Exception as exc:  # click.ClickException or a TOML error, depending on the text
        raise ValueError(f"--run-config {text!r}: {exc}") from None


def format_overrides(values: Mapping[str, Any]) -> str:
    """The ``--run-config`` text of ``values`` (inverse of :func:`parse_overrides`)."""

    def toml(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return repr(value)
        text = str(value)
        return f"'{text}'" if "'" not in text else f'"{text}"'

    return " ".join(f"{key}={toml(value)}" for key, value in values.items())


def merge_overrides(base: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``base`` with the user's ``--run-config`` ``text`` applied over it (the user wins)."""
    return {**base, **parse_overrides(text)}


def check_run_config(values: Mapping[str, Any]) -> RunConfig:
    """The validated :class:`RunConfig` of ``values`` (kebab-case keys; missing = default).

    Raises
    ------
    ValueError
        Naming the first bad key (see the module docstring).
    """
    cfg = RunConfig.from_run_config(dict(values))
    check_specs(cfg)  # attack, delay, dropout, device, network; attack ids in range
    if cfg.node_manifest:
        read_manifest(cfg.node_manifest)  # its errors name the key and the file
    check_user_code(cfg)  # a user's model / dataset import path, against its contract
    _check_resume(cfg)
    return cfg


def _check_resume(cfg: RunConfig) -> None:
    """Read ``resume-from``'s checkpoint as the ServerApp will (missing, damaged, another
    configuration, a completed run: named before a deployment starts).

    A relative path that does not exist here is left to the ServerApp, whose working
    directory may differ from the caller's; an absolute one is checked wherever it is.
    """
    if not cfg.resume_from:
        return
    where = Path(cfg.resume_from)
    if not where.is_absolute() and not where.exists():
        return
    from fl_r2sp.fl.server.checkpoint import load_checkpoint

    try:
        load_checkpoint(cfg)
    except (FileNotFoundError, ValueError) as exc:  # CheckpointError is a ValueError
        text = str(exc)
        if not text.startswith("resume-from="):
            text = f"resume-from={cfg.resume_from!r}: {text}"
        raise ValueError(f"invalid run config {text}") from None


def main(argv: list[str] | None = None) -> int:
    """Check the ``--run-config`` values among ``flwr run`` arguments; 0 if valid, else 2.

    ``python -m fl_r2sp.fl.flower.run_config_check --run-config "key=value ..." [other flwr
    run arguments, ignored]``: what ``scripts/main.sh`` runs before ``flwr run``.
    """
    args = sys.argv[1:] if argv is None else argv
    texts = [b for a, b in itertools.pairwise(["", *args]) if a == "--run-config"]
    texts += [a.split("=", 1)[1] for a in args if a.startswith("--run-config=")]
    try:
        values: dict[str, Any] = {}
        for text in texts:
            values = merge_overrides(values, text)
        check_run_config(values)
    except ValueError as exc:
        print(f"run config: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

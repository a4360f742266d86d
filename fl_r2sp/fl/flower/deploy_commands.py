"""The command lines and config file of a local Flower deployment, and reading its run.

The steps ``scripts/deploy_local.py`` runs (its docstring shows them as shell commands):
:func:`superlink_cmd` (1), :func:`supernode_cmd` (2), :func:`write_flower_config` (3) and
:func:`flwr_run_cmd` (4); following the run to its end is :mod:`fl_r2sp.fl.flower.run_watch`.
Starting and stopping the processes is
:mod:`fl_r2sp.fl.flower.processes`; TLS and node authentication flags are
:mod:`fl_r2sp.fl.flower.secure_deploy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fl_r2sp.fl.flower.pki import Pki
from fl_r2sp.fl.flower.processes import flwr_bin
from fl_r2sp.fl.flower.run_config_check import format_overrides
from fl_r2sp.fl.flower.secure_deploy import superlink_security

#: Name of the SuperLink connection written to ``$FLWR_HOME/config.toml``.
CONNECTION = "deployment"


def write_flower_config(home: Path, port: int, ca_cert: Path | None = None) -> Path:
    """Write ``home/config.toml`` with the ``deployment`` connection.

    Insecure by default; with ``ca_cert`` it verifies the SuperLink's TLS
    certificate against that CA (``root-certificates``, an absolute path).
    """
    security = (
        "insecure = true"
        if ca_cert is None
        else f'root-certificates = "{ca_cert.resolve().as_posix()}"'
    )
    path = home / "config.toml"
    path.write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n'
        f'[superlink.{CONNECTION}]\naddress = "127.0.0.1:{port}"\n{security}\n'
    )
    return path


def superlink_cmd(port: int, database: Path, pki: Pki | None = None) -> list[str]:
    """The ``flower-superlink`` command line (step 1); TLS + node authentication with ``pki``."""
    return [
        str(flwr_bin("flower-superlink")),
        *superlink_security(pki),
        "--isolation",
        "subprocess",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--database",
        str(database),
        "--disable-runtime-dependency-installation",
    ]


def supernode_cmd(
    link_port: int,
    port: int,
    partition: int,
    num_partitions: int,
    security: list[str] | None = None,
) -> list[str]:
    """The ``flower-supernode`` command line of one partition (step 2).

    ``security``: the node's TLS/authentication flags (default None: ``--insecure``).
    """
    flags = ["--insecure"] if security is None else security
    return [
        str(flwr_bin("flower-supernode")),
        *flags,
        "--superlink",
        f"127.0.0.1:{link_port}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--node-config",
        f"partition-id={partition} num-partitions={num_partitions}",
    ]


def flwr_run_cmd(app: Path, overrides: Mapping[str, Any]) -> list[str]:
    """The ``flwr run`` command line (step 4) with ``overrides`` as one ``--run-config``.

    One flag: Flower refuses a key given twice in one text, so callers merge their keys
    and the user's first (:func:`fl_r2sp.fl.flower.run_config_check.merge_overrides`).
    """
    cmd = [str(flwr_bin("flwr")), "run", str(app), CONNECTION, "--stream"]
    if overrides:
        cmd += ["--run-config", format_overrides(overrides)]
    return cmd

"""Pieces of a secure deployment: TLS and authentication flags, node registration, intruders.

Used by ``scripts/deploy_local.py --secure`` (and its end-to-end test); the files come from
:mod:`fl_r2sp.fl.flower.pki`. The flags are Flower 1.42's own (``flower-superlink --help``,
``flower-supernode --help``, ``flwr supernode register --help``).

*Intruders* are SuperNodes that must get no work, started beside the real ones to show that
they get none: four the SuperLink refuses (no TLS, another CA, a valid but unregistered key,
no key) and a *stranger* that registers a fresh key itself, which Flower's open Control API
allows, and is refused by the ServerApp because the node manifest (:func:`bind_partitions`,
:mod:`.node_manifest`) binds its partition to another key. Each claims the partition id of a
real node. :func:`intruder_verdicts` and :func:`stranger_verdict` read their logs, the
SuperLink's node list and the run's output afterwards.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fl_r2sp.fl.flower.node_manifest import Binding, fingerprint, write_manifest
from fl_r2sp.fl.flower.pki import NodeKey, Pki, make_ca, make_node_key
from fl_r2sp.fl.flower.processes import flwr_bin

log = logging.getLogger("fl_r2sp")

#: A SuperNode logs this once the SuperLink accepted it.
JOINED_LINE = "SuperNode ID:"
#: A SuperNode logs this for every train message it receives (Flower 1.42).
TRAIN_LINE = "Receiving: train message"
#: Seconds one ``flwr supernode register`` / ``list`` call may take.
CLI_TIMEOUT = 120.0
#: What a refused SuperNode logs, by cause (the first found is reported).
_REFUSALS = (
    ("TLS certificate not trusted", "CERTIFICATE_VERIFY_FAILED"),
    ("not registered", "Failed to activate SuperNode"),
    ("no key: authentication required", "All SuperNodes must be registered"),
    ("TLS handshake failed", "SSL/TLS handshake error"),
    ("no connection (retrying)", "Connection attempt failed"),
)


def superlink_security(pki: Pki | None) -> list[str]:
    """SuperLink flags: TLS with the PKI's certificate and node authentication, or insecure."""
    if pki is None:
        return ["--insecure"]
    return [
        "--ssl-ca-certfile",
        str(pki.ca_cert),
        "--ssl-certfile",
        str(pki.server_cert),
        "--ssl-keyfile",
        str(pki.server_key),
        "--enable-supernode-auth",
    ]


def supernode_security(ca_cert: Path | None, key: NodeKey | None = None) -> list[str]:
    """SuperNode flags: trust ``ca_cert`` and sign with ``key`` (if any), or insecure."""
    if ca_cert is None:
        return ["--insecure"]
    flags = ["--root-certificates", str(ca_cert)]
    if key is not None:
        flags += ["--auth-supernode-private-key", str(key.private)]
    return flags


def register_nodes(
    keys: Sequence[NodeKey], connection: str, env: Mapping[str, str], cwd: Path
) -> list[int]:
    """Register each key's public half with ``flwr supernode register``; the node ids.

    The calls run side by side (each starts the ``flwr`` CLI, a few seconds).

    Raises
    ------
    RuntimeError
        If a registration fails or prints no node id (with flwr's output).
    """
    procs = [
        subprocess.Popen(
            [
                str(flwr_bin("flwr")),
                "supernode",
                "register",
                str(k.public),
                connection,
                "--format",
                "json",
            ],
            env=dict(env),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k in keys
    ]
    ids: list[int] = []
    for key, proc in zip(keys, procs, strict=True):
        try:
            out, _ = proc.communicate(timeout=CLI_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        match = re.search(r'"node-id":\s*"?(\d+)', out) or re.search(r"SuperNode (\d+) regis", out)
        if proc.returncode != 0 or match is None:
            raise RuntimeError(
                f"flwr supernode register {key.public} failed "
                f"(exit {proc.returncode}):\n{out[-2000:]}"
            )
        ids.append(int(match.group(1)))
    return ids


def listed_nodes(connection: str, env: Mapping[str, str], cwd: Path) -> dict[int, str]:
    """The SuperLink's nodes as ``flwr supernode list`` reports them: {node id: status}.

    Raises
    ------
    RuntimeError
        If the command fails or does not print the JSON listing.
    """
    res = subprocess.run(
        [str(flwr_bin("flwr")), "supernode", "list", connection, "--format", "json"],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )
    start = res.stdout.find("{")
    try:
        nodes = json.loads(res.stdout[start:])["nodes"] if start >= 0 else None
    except (ValueError, KeyError):
        nodes = None
    if res.returncode != 0 or nodes is None:
        raise RuntimeError(
            f"flwr supernode list failed (exit {res.returncode}):\n"
            f"{(res.stdout + res.stderr)[-2000:]}"
        )
    return {int(n["node-id"]): str(n["status"]) for n in nodes}


@dataclass(frozen=True)
class Intruder:
    """A SuperNode that must get no work: its name, its security flags, and the key it
    registers itself (``key``; None: it does not register)."""

    name: str
    flags: tuple[str, ...]
    key: NodeKey | None = None


def make_intruders(pki: Pki, directory: Path) -> list[Intruder]:
    """The five intruders (files of the rogue ones go under ``directory``).

    ``wrong-ca`` signs with a *registered* key, so TLS is the only thing it gets wrong.
    ``stranger`` is the one the SuperLink admits: it registers a fresh key of its own with
    ``flwr supernode register`` (Flower's Control API asks no credential) and claims a real
    node's partition; the node manifest must keep it from any work.
    """
    rogue_ca, _ = make_ca(directory, name="rogue CA")
    unregistered = make_node_key(directory, "unregistered")
    fresh = make_node_key(directory, "stranger")
    registered = pki.nodes[0] if pki.nodes else unregistered
    return [
        Intruder("insecure", tuple(supernode_security(None))),
        Intruder("wrong-ca", tuple(supernode_security(rogue_ca, registered))),
        Intruder("unregistered-key", tuple(supernode_security(pki.ca_cert, unregistered))),
        Intruder("no-key", tuple(supernode_security(pki.ca_cert))),
        Intruder("stranger", tuple(supernode_security(pki.ca_cert, fresh)), fresh),
    ]


def bind_partitions(keys: Sequence[NodeKey], node_ids: Sequence[int], path: Path) -> Path:
    """Write the node manifest: partition i belongs to ``keys[i]`` (node ``node_ids[i]``)."""
    bindings = {
        i: Binding(node, fingerprint(key.public.read_bytes()))
        for i, (key, node) in enumerate(zip(keys, node_ids, strict=True))
    }
    return write_manifest(path, bindings)


def stranger_verdict(log_text: str, run_output: str, node: int, key: NodeKey) -> str:
    """``refused (...)`` or ``GOT WORK``/``JOINED ...`` for a registered stranger (node ``node``).

    Refused means: its log shows no train message and the ServerApp's output names it as
    refused by the node manifest.
    """
    named = f"node {node} refused, no work for it" in run_output
    if TRAIN_LINE in log_text:
        return f"GOT WORK: train messages reached node {node} ({fingerprint_of(key)})"
    if named:
        return f"refused (key {fingerprint_of(key)}, node {node}: not bound to its partition)"
    if JOINED_LINE not in log_text:
        return f"refused (node {node} never joined)"
    return f"JOINED, not refused by the ServerApp (node {node}, key {fingerprint_of(key)})"


def fingerprint_of(key: NodeKey) -> str:
    """The ``SHA256:...`` fingerprint of ``key``'s public half."""
    return fingerprint(key.public.read_bytes())


def intruder_verdicts(
    logs: Mapping[str, Path], registered: Sequence[int], listed: Mapping[int, str]
) -> dict[str, str]:
    """``refused (<cause>)`` or ``JOINED ...`` per intruder, from its log and the node list.

    An intruder joined if its log shows a SuperNode id, or if the SuperLink lists a node
    that was not registered (then every intruder is suspect and says so).
    """
    strangers = sorted(set(listed) - set(registered))
    verdicts: dict[str, str] = {}
    for name, path in logs.items():
        text = path.read_text(errors="replace") if path.exists() else ""
        if JOINED_LINE in text:
            verdicts[name] = "JOINED (its log shows a SuperNode id)"
        elif strangers:
            verdicts[name] = f"JOINED? the SuperLink lists unregistered nodes {strangers}"
        else:
            cause = next((c for c, line in _REFUSALS if line in text), "no connection")
            verdicts[name] = f"refused ({cause})"
    return verdicts


def unregister_node(node: int, connection: str, env: Mapping[str, str], cwd: Path) -> bool:
    """Revoke ``node``'s registration with ``flwr supernode unregister``; True if it worked."""
    res = subprocess.run(
        [str(flwr_bin("flwr")), "supernode", "unregister", str(node), connection],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )
    return res.returncode == 0


class RegistrationGuard:
    """Closes registration once a deployment is up, as far as Flower 1.42 allows.

    Flower's open-source Control API registers any key from anyone who reaches the
    SuperLink's port. The guard lists the nodes every ``interval`` s (in a thread) and
    revokes each one that is not ``allowed``, so a key registered after the deployment came
    up is unregistered within about ``interval`` s (plus one ``flwr`` call). Until then it is
    only a registered node: the node manifest keeps it from any partition's work.

    Parameters
    ----------
    allowed : iterable of int
        Node ids registered by the operator.
    list_nodes : callable
        ``() -> {node id: status}`` (:func:`listed_nodes` bound to a connection).
    revoke : callable
        ``node id -> bool`` (:func:`unregister_node` bound to a connection).
    interval : float (default: 10.0)
        Seconds between two looks.
    """

    def __init__(
        self,
        allowed: Iterable[int],
        list_nodes: Callable[[], Mapping[int, str]],
        revoke: Callable[[int], bool],
        interval: float = 10.0,
    ) -> None:
        self.allowed = frozenset(allowed)
        self.list_nodes, self.revoke, self.interval = list_nodes, revoke, interval
        self.revoked: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def check_once(self) -> list[int]:
        """Revoke every listed node that is not allowed (not revoked yet); the ones revoked."""
        done = set(self.revoked)
        strangers = sorted(n for n in self.list_nodes() if n not in self.allowed | done)
        revoked = [n for n in strangers if self.revoke(n)]
        for node in revoked:
            log.warning(
                "registration closed: node %d was registered by someone else; revoked", node
            )
        self.revoked += revoked
        return revoked

    def start(self) -> None:
        """Look every ``interval`` s until :meth:`stop`."""
        self._thread.start()

    def stop(self) -> None:
        """Stop looking (waits for a look in progress)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2 * CLI_TIMEOUT)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check_once()
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                log.warning("registration guard: could not list or revoke nodes (%s)", exc)

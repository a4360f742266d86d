"""A partition belongs to a key: the manifest binding partition ids to registered SuperNodes.

With SuperNode authentication (``--enable-supernode-auth``) the SuperLink gives each
registered public key its own node id (``flwr supernode register`` prints it) and accepts a
node only with that key's signatures, so a node id stands for a key. The operator (here
``scripts/deploy_local.py --secure``) writes the manifest, ``{partition id: (node id, key
fingerprint)}``, after registering the keys; the ServerApp reads it (run-config key
``node-manifest``) and gives work for a partition only to the node bound to it. A node whose
id is not the one bound to the partition it claims is refused and named with the fingerprint
of the key bound there (the ServerApp does not see the stranger's key; the operator's
``flwr supernode list`` can map its node id to one).

File format (JSON)::

    {"format": 1, "partitions": {"0": {"node-id": 123, "fingerprint": "SHA256:..."}, ...}}
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Version of the manifest layout.
FORMAT = 1


@dataclass(frozen=True)
class Binding:
    """The registered SuperNode a partition belongs to.

    Attributes
    ----------
    node_id : int
        Node id the SuperLink gave the key at registration.
    fingerprint : str
        ``SHA256:<base64>`` of the key (as ``ssh-keygen -l`` prints it).
    """

    node_id: int
    fingerprint: str


def fingerprint(public_key: bytes) -> str:
    """``SHA256:<base64, no padding>`` of an OpenSSH one-line public key (``ssh-keygen -l``).

    Raises
    ------
    ValueError
        If ``public_key`` is not ``<type> <base64 blob> [comment]``.
    """
    parts = public_key.split()
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (IndexError, ValueError):
        raise ValueError("not an OpenSSH public key line ('<type> <base64> [comment]')") from None
    digest = base64.b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()
    return f"SHA256:{digest}"


def write_manifest(path: Path, bindings: Mapping[int, Binding]) -> Path:
    """Write ``bindings`` (partition id -> binding) to ``path`` as JSON; return ``path``."""
    partitions = {
        str(pid): {"node-id": b.node_id, "fingerprint": b.fingerprint}
        for pid, b in sorted(bindings.items())
    }
    path.write_text(json.dumps({"format": FORMAT, "partitions": partitions}, indent=2) + "\n")
    return path


def read_manifest(path: str | Path) -> dict[int, Binding]:
    """The bindings of the manifest at ``path``.

    Raises
    ------
    ValueError
        Naming the file and what is wrong with it (missing, not JSON, another format, a
        malformed entry, a node id bound to two partitions).
    """
    try:
        doc = json.loads(Path(path).read_text())
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}, this version reads {FORMAT}")
        bindings = {
            int(pid): Binding(int(entry["node-id"]), str(entry["fingerprint"]))
            for pid, entry in doc["partitions"].items()
        }
    except OSError as exc:
        raise ValueError(f"node-manifest {path}: cannot be read ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"node-manifest {path}: not a node manifest ({exc})") from None
    nodes = [b.node_id for b in bindings.values()]
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"node-manifest {path}: a node id is bound to two partitions")
    return bindings


def refusal(bindings: Mapping[int, Binding], node: int, pid: int) -> str | None:
    """Why ``node`` may not serve partition ``pid`` under ``bindings``, or None if it may."""
    bound = bindings.get(pid)
    if bound is None:
        return f"partition {pid} is bound to no key in the node manifest"
    if bound.node_id != node:
        return (
            f"partition {pid} belongs to the key {bound.fingerprint} (node {bound.node_id}); "
            f"node {node} is registered with another key"
        )
    return None

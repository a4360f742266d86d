#!/usr/bin/env python
"""Make the files of a secure Flower deployment: a private CA, a SuperLink certificate, node keys.

For real machines (``scripts/deploy_local.py --secure`` makes its own on loopback)::

    python scripts/secure_pki.py --out pki --ip 10.0.0.5 --dns superlink.example.org --nodes 8

writes

* ``pki/ca.crt`` (give it to every SuperNode and ``flwr`` user) and ``pki/ca.key`` (keep it
  offline: it can sign certificates every node will trust);
* ``pki/superlink.crt`` and ``pki/superlink.key`` for the SuperLink host, valid for every
  ``--ip`` and ``--dns`` given (the address the SuperNodes dial must be among them);
* ``pki/nodes/node-<i>.key`` (copy to SuperNode i only) and ``pki/nodes/node-<i>.pub``
  (register with ``flwr supernode register``).

``--add-nodes K`` with an existing ``--out`` only adds keys ``node-<n>`` ... for new
SuperNodes. Keys are ECDSA P-384; private keys are written mode 0600. The README section
"Secure deployment" gives the commands that use these files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO))

from fl_r2sp.fl.flower.pki import DAYS, make_node_key, make_pki  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument(
        "--ip",
        action="append",
        default=[],
        help="IP address of the SuperLink, repeatable (default: 127.0.0.1 if no --dns either)",
    )
    p.add_argument(
        "--dns", action="append", default=[], help="DNS name of the SuperLink, repeatable"
    )
    p.add_argument("--nodes", type=int, default=0, help="SuperNode key pairs to make (default: 0)")
    p.add_argument("--days", type=int, default=DAYS, help=f"validity in days (default: {DAYS})")
    p.add_argument(
        "--add-nodes",
        type=int,
        default=0,
        help="only add this many node keys to an existing --out (numbered on)",
    )
    args = p.parse_args(argv)
    if args.nodes < 0 or args.add_nodes < 0 or args.days < 1:
        p.error("--nodes and --add-nodes must be >= 0, --days >= 1")
    if not args.ip and not args.dns:
        args.ip = ["127.0.0.1"]
    return args


def add_nodes(out: Path, count: int) -> list[Path]:
    """Make ``count`` more node keys in ``out/nodes``, numbered after the existing ones."""
    nodes = out / "nodes"
    taken = (
        {int(p.stem.split("-")[1]) for p in nodes.glob("node-*.pub")} if nodes.is_dir() else set()
    )
    start = max(taken, default=-1) + 1
    return [make_node_key(nodes, f"node-{i}").public for i in range(start, start + count)]


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = parse_args(argv)
    if args.add_nodes:
        if not (args.out / "ca.crt").is_file():
            print(f"secure_pki: {args.out} has no ca.crt; make the PKI first", file=sys.stderr)
            return 2
        for pub in add_nodes(args.out, args.add_nodes):
            print(f"secure_pki: register {pub}")
        return 0
    if (args.out / "ca.key").exists():
        print(
            f"secure_pki: {args.out} already holds a CA; use another --out or --add-nodes",
            file=sys.stderr,
        )
        return 2
    pki = make_pki(args.out, args.nodes, args.ip, args.dns, args.days)
    print(f"secure_pki: CA {pki.ca_cert} (keep {pki.ca_key} offline)")
    print(
        f"secure_pki: SuperLink {pki.server_cert} / {pki.server_key} for "
        f"{', '.join(args.ip + args.dns)}"
    )
    for node in pki.nodes:
        print(f"secure_pki: node key {node.private}, register {node.public}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

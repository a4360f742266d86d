#!/usr/bin/env python
"""Deploy the app on this machine: one SuperLink, N SuperNodes, ``flwr run``.

Unlike ``flwr run .`` (the simulation engine), this is Flower's deployment
runtime: separate SuperLink and SuperNode processes talking over HTTP, one
``flwr-clientapp`` process per message, real (wall-clock) time. The run
config is ``clock='wall' num-partitions=N`` with ``--run-config`` applied over it,
checked before anything starts (a bad key or value exits with 2, naming it).

Usage::

    python scripts/deploy_local.py --num-supernodes 4 \\
        --run-config "num-groups=2 max-updates=4 local-iterations=5"

The commands it runs (copy them to deploy on real machines: start the
SuperLink with ``--host 0.0.0.0``, point ``--superlink`` at its host, and use
TLS instead of ``--insecure`` outside a trusted network). In flwr 1.42 the
SuperLink's Fleet, Control and ServerAppIo APIs share one HTTP port::

    # 1. the SuperLink (``--database`` keeps its state in a file)
    flower-superlink --insecure --isolation subprocess --host 127.0.0.1 \\
        --port 9091 --database state.db --disable-runtime-dependency-installation

    # 2. one SuperNode per partition i = 0 .. N-1 (``--port`` is the node's
    #    local ClientAppIo API: one per node on a shared machine)
    flower-supernode --insecure --superlink 127.0.0.1:9091 \\
        --host 127.0.0.1 --port $((9100 + i)) \\
        --node-config "partition-id=$i num-partitions=$N"

    # 3. a connection to the SuperLink in $FLWR_HOME/config.toml
    [superlink]
    default = "deployment"
    [superlink.deployment]
    address = "127.0.0.1:9091"
    insecure = true

    # 4. submit the app, stream its logs, then check how it ended
    flwr run . deployment --stream --run-config "clock='wall' num-partitions=$N"
    flwr ls deployment --run-id <id>

With ``--secure`` the SuperLink speaks TLS with a certificate from a private CA and admits
only registered SuperNodes (see "Secure deployment" in the README for real machines)::

    # 1. TLS and node authentication (files made as by scripts/secure_pki.py)
    flower-superlink --ssl-ca-certfile ca.crt --ssl-certfile superlink.crt \\
        --ssl-keyfile superlink.key --enable-supernode-auth --isolation subprocess ...

    # 3. (written first) the connection trusts the CA instead of ``insecure = true``
    root-certificates = "/abs/path/ca.crt"

    # 2. register each SuperNode's public key, then start the node with the CA
    #    and its private key instead of ``--insecure``
    flwr supernode register nodes/node-$i.pub deployment
    flower-supernode --root-certificates ca.crt \\
        --auth-supernode-private-key nodes/node-$i.key --superlink 127.0.0.1:9091 ...

After registering the keys it writes ``FLWR_HOME/node-manifest.json``, binding partition i
to node i's key (node id and fingerprint), and passes it to the run (``node-manifest``): the
ServerApp gives a partition's work only to the node registered with its key.

``--intruders`` (with ``--secure``) also starts four SuperNodes the SuperLink must refuse
(no TLS, another CA, an unregistered key, no key) and a stranger that registers a fresh key
itself (Flower's Control API lets anyone who reaches the port do that), each claiming a real
node's partition id, and checks afterwards that none got work: the four were refused by the
SuperLink, the stranger by the ServerApp (exit code 3 otherwise).

Here the ports are free ones picked at start, ``FLWR_HOME`` and the database
are in a temporary folder (deleted at the end unless ``--keep-home``; the
SuperLink and SuperNode logs are there) and every process is stopped at the
end, whatever happens (SIGTERM to each process group, SIGKILL after a grace
period). It waits for the run's end as the SuperLink reports it (``flwr ls``), not for
``flwr run --stream`` to exit (its log stream can end first): the exit code is flwr's if it
submitted no run, 1 if the run did not finish ``completed``, 124 on ``--timeout`` or when
the run stopped progressing (no global update logged within 4x the longest gap so far, and
at least the run's own ``max-update-gap`` + 300 s: the app fails a run that long without an
update itself; :func:`fl_r2sp.fl.flower.run_watch.watch_for`).
"""

from __future__ import annotations

import argparse
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO))

from fl_r2sp.fl.flower.deploy_commands import (  # noqa: E402
    CONNECTION,
    flwr_run_cmd,
    superlink_cmd,
    supernode_cmd,
    write_flower_config,
)
from fl_r2sp.fl.flower.pki import Pki, make_pki  # noqa: E402
from fl_r2sp.fl.flower.processes import (  # noqa: E402
    flower_env,
    free_ports,
    start_group,
    stop_groups,
    wait_http_ok,
)
from fl_r2sp.fl.flower.run_config_check import check_run_config, merge_overrides  # noqa: E402
from fl_r2sp.fl.flower.run_watch import follow_flwr_run, watch_for  # noqa: E402
from fl_r2sp.fl.flower.secure_deploy import (  # noqa: E402
    Intruder,
    RegistrationGuard,
    bind_partitions,
    intruder_verdicts,
    listed_nodes,
    make_intruders,
    register_nodes,
    stranger_verdict,
    supernode_security,
    unregister_node,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--num-supernodes",
        type=int,
        default=4,
        help="SuperNodes to start, one per partition (default: 4)",
    )
    p.add_argument(
        "--run-config",
        default="",
        help='extra run-config overrides for flwr run, e.g. "num-groups=2 max-updates=4"',
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds before the run is abandoned, exit code 124 (default: 1800; 0 = no bound)",
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the SuperLink to answer (default: 60)",
    )
    p.add_argument(
        "--keep-home",
        action="store_true",
        help="keep the temporary FLWR_HOME (config, database, logs) and print its path",
    )
    p.add_argument(
        "--flwr-home",
        type=Path,
        default=None,
        help="use this empty or new folder as FLWR_HOME (kept) instead of a temporary one",
    )
    p.add_argument(
        "--app", type=Path, default=REPO, help="Flower app folder (default: this repository)"
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="TLS with a private CA (made in FLWR_HOME/certs) and SuperNode "
        "authentication: only registered node keys may join (default: insecure)",
    )
    p.add_argument(
        "--intruders",
        action="store_true",
        help="with --secure: also start 4 SuperNodes that must be refused and check "
        "that none joined (exit code 3 if one did)",
    )
    p.add_argument(
        "--close-registration",
        action="store_true",
        help="with --secure: once the nodes are registered, revoke every key registered "
        "later (checked every 10 s; Flower 1.42 cannot refuse the registration itself)",
    )
    args = p.parse_args(argv)
    if args.close_registration and not args.secure:
        p.error("--close-registration needs --secure (there is no registration without it)")
    if args.intruders and not args.secure:
        p.error("--intruders needs --secure (an insecure SuperLink admits anyone)")
    if args.num_supernodes < 1:
        p.error(f"--num-supernodes must be >= 1, got {args.num_supernodes}")
    if not (args.app / "pyproject.toml").is_file():
        p.error(f"--app {args.app} has no pyproject.toml: pass the Flower app's folder")
    # Checked here, before Flower sees it: Flower's own refusal names no key.
    base = {"clock": "wall", "num-partitions": args.num_supernodes}
    try:
        if args.app.resolve() == REPO.resolve():
            args.overrides = merge_overrides(base, args.run_config)
            check_run_config(args.overrides)
        else:  # a user's app: its own keys; ours only where it declares them
            args.overrides = user_app_overrides(args.app, base, args.run_config)
    except ValueError as exc:
        p.error(str(exc))
    return args


def user_app_overrides(app: Path, base: dict[str, Any], text: str) -> dict[str, Any]:
    """The overrides for another Flower app: ``base`` keys the app declares (in
    ``[tool.flwr.app.config]``), then the user's; a key the app does not declare is refused
    naming it (Flower's own refusal names none)."""
    declared = tomllib.loads((app / "pyproject.toml").read_text())
    keys = set(declared.get("tool", {}).get("flwr", {}).get("app", {}).get("config", {}))
    out = merge_overrides({k: v for k, v in base.items() if k in keys}, text)
    unknown = sorted(set(out) - keys)
    if unknown:
        raise ValueError(
            f"--run-config key {unknown[0]!r} is not in {app}/pyproject.toml's "
            f"[tool.flwr.app.config] (declared: {', '.join(sorted(keys))})"
        )
    return out


def submit(args: argparse.Namespace, env: dict[str, str]) -> tuple[int, str]:
    """Run ``flwr run`` until the SuperLink says the run finished (or ``--timeout``); return
    the exit code and its output (:func:`fl_r2sp.fl.flower.run_watch.follow_flwr_run`: the log
    stream may end before the run, and a run that stops progressing is given up)."""
    cmd = flwr_run_cmd(args.app.resolve(), args.overrides)
    print("$", " ".join(cmd), flush=True)
    lines: list[str] = []
    deadline = time.monotonic() + args.timeout if args.timeout else None
    end = follow_flwr_run(
        cmd, env, args.app, CONNECTION, lines, watch_for(args.overrides), deadline
    )
    print(f"deploy_local: {end.describe()}", flush=True)
    output = "".join(lines)
    if end.gave_up is not None:
        print(f"deploy_local: gave up waiting for the run: {end.gave_up}", file=sys.stderr)
        return 124, output
    if end.run_id is None:
        return end.exit_code or 1, output
    return (0 if end.completed else 1), output


def deploy(args: argparse.Namespace, home: Path) -> int:
    """Start the SuperLink and SuperNodes, run, stop everything; return the exit code."""
    env = flower_env(home)
    n = args.num_supernodes
    pki = make_pki(home / "certs", n) if args.secure else None
    intruders = make_intruders(pki, home / "rogue") if pki is not None and args.intruders else []
    link_port, *node_ports = free_ports(1 + n + len(intruders))
    write_flower_config(home, link_port, pki.ca_cert if pki is not None else None)
    logs = home / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen[bytes]] = []
    handles = []
    guard: RegistrationGuard | None = None

    def start(name: str, cmd: list[str]) -> None:
        handles.append(open(logs / f"{name}.log", "wb"))  # noqa: SIM115 (closed in finally)
        procs.append(start_group(cmd, env, args.app, handles[-1]))

    try:
        start("superlink", superlink_cmd(link_port, home / "state.db", pki))
        scheme = "http" if pki is None else "https"
        context = None if pki is None else ssl.create_default_context(cafile=str(pki.ca_cert))
        wait_http_ok(
            f"{scheme}://127.0.0.1:{link_port}/health", args.startup_timeout, procs[0], context
        )
        registered, guard = register_and_bind(args, pki, env, home) if pki else ([], None)
        # Strangers register fresh keys themselves: Flower's Control API asks no credential.
        own_keys = [b.key for b in intruders if b.key is not None]
        stranger_ids = register_nodes(own_keys, CONNECTION, env, args.app)
        names = [b.name for b in intruders if b.key is not None]
        strangers = dict(zip(names, stranger_ids, strict=True))
        for i, port in enumerate(node_ports[:n]):
            security = None if pki is None else supernode_security(pki.ca_cert, pki.nodes[i])
            start(f"supernode-{i}", supernode_cmd(link_port, port, i, n, security))
        for k, (bad, port) in enumerate(zip(intruders, node_ports[n:], strict=True)):
            start(f"intruder-{bad.name}", supernode_cmd(link_port, port, k % n, n, list(bad.flags)))
        code, output = submit(args, env)
        revoked = guard.revoked if guard is not None else []
        if intruders:
            seen = Seen(logs, output, registered, strangers, revoked)
            code = check_intruders(env, args.app, intruders, seen, n) or code
        return code
    finally:
        if guard is not None:
            guard.stop()
        # SuperNodes first: they deregister from the SuperLink while it still runs.
        stop_groups(procs[1:])
        stop_groups(procs[:1])
        for handle in handles:
            handle.close()


def register_and_bind(
    args: argparse.Namespace, pki: Pki, env: dict[str, str], home: Path
) -> tuple[list[int], RegistrationGuard | None]:
    """Register the nodes' keys, write the node manifest and point the run at it; the ids,
    and the started registration guard with ``--close-registration``."""
    registered = register_nodes(pki.nodes, CONNECTION, env, args.app)
    manifest = bind_partitions(pki.nodes, registered, home / "node-manifest.json")
    args.overrides.setdefault("node-manifest", str(manifest))  # a user's value wins
    print(f"deploy_local: partitions bound to their keys in {manifest}", flush=True)
    if not args.close_registration:
        return registered, None
    guard = RegistrationGuard(
        registered,
        lambda: listed_nodes(CONNECTION, env, args.app),
        lambda node: unregister_node(node, CONNECTION, env, args.app),
    )
    guard.start()
    return registered, guard


class Seen(NamedTuple):
    """What a secure run with intruders left: logs folder, flwr's output, the node ids of the
    registered real nodes, of the strangers (by intruder name) and of the revoked nodes."""

    logs: Path
    output: str
    registered: list[int]
    strangers: dict[str, int]
    revoked: list[int]


def check_intruders(
    env: dict[str, str], app: Path, intruders: list[Intruder], seen: Seen, num_nodes: int
) -> int:
    """Print each intruder's verdict and the online nodes; 3 if an intruder got in, else 0."""
    listed = listed_nodes(CONNECTION, env, app)
    online = sorted(i for i, status in listed.items() if status == "online")
    known = seen.registered + list(seen.strangers.values())
    print(
        f"deploy_local: SuperLink lists {len(listed)} nodes, {len(online)} online; "
        f"{len(seen.registered)} registered, {len(seen.strangers)} registered by strangers",
        flush=True,
    )
    logs = {b.name: seen.logs / f"intruder-{b.name}.log" for b in intruders}
    refused = [b.name for b in intruders if b.key is None]
    verdicts = intruder_verdicts({b: logs[b] for b in refused}, known, listed)
    for b in intruders:
        if b.key is not None:
            text = logs[b.name].read_text(errors="replace") if logs[b.name].exists() else ""
            node = seen.strangers[b.name]
            verdicts[b.name] = stranger_verdict(text, seen.output, node, b.key)
            if node in seen.revoked and verdicts[b.name].startswith("refused"):
                verdicts[b.name] += "; its registration was revoked (--close-registration)"
            elif node in seen.revoked and not verdicts[b.name].startswith("GOT WORK"):
                # Revoked before the ServerApp could name it: it joined, and got no work.
                verdicts[b.name] = (f"refused (node {node}: its registration was revoked by "
                                    "--close-registration; it got no work)")  # fmt: skip
    for name, verdict in verdicts.items():
        print(f"deploy_local: intruder {name}: {verdict}", flush=True)
    bad = any(not v.startswith("refused") for v in verdicts.values())
    admitted = len(seen.strangers) - len(seen.revoked)
    return 3 if bad or len(online) > num_nodes + admitted else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = parse_args(argv)
    if args.flwr_home is not None:
        home = args.flwr_home.resolve()
        home.mkdir(parents=True, exist_ok=True)
        if any(home.iterdir()):
            print(
                f"deploy_local: --flwr-home {home} is not empty: pass a new folder", file=sys.stderr
            )
            return 2
        args.keep_home = True
    else:
        home = Path(tempfile.mkdtemp(prefix="flwr-deploy-"))
    code = 1
    try:
        code = deploy(args, home)
    finally:
        if code != 0:
            for log in sorted((home / "logs").glob("*.log")):
                tail = log.read_text(errors="replace").splitlines()[-15:]
                print(f"--- last lines of {log.name} ---", *tail, sep="\n", file=sys.stderr)
        if args.keep_home:
            print(f"deploy_local: FLWR_HOME kept at {home}", flush=True)
        else:
            shutil.rmtree(home, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Start and stop Flower's processes (SuperLink, SuperNodes) from Python.

Used by ``scripts/deploy_local.py`` and the end-to-end tests. Linux only for
the parts that scan ``/proc`` (:func:`pids_matching`, :func:`descendants`,
:func:`stop_local_superlink`); elsewhere they find nothing.

Why this exists: ``flwr run`` starts a *detached* local SuperLink (plus its
``flower-superexec``) that outlives the command, and a deployment needs a
SuperLink and N SuperNodes that must all be stopped whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: Seconds between two liveness checks while waiting for processes to exit.
_POLL = 0.1


def flwr_bin(name: str = "flwr") -> Path:
    """Path of a Flower executable installed next to the running interpreter.

    Parameters
    ----------
    name : str (default: "flwr")
        ``flwr``, ``flower-superlink``, ``flower-supernode`` ...

    Raises
    ------
    FileNotFoundError
        If the executable is not in the interpreter's ``bin`` folder.
    """
    # Not resolved: a venv's python is a symlink to the base interpreter.
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: install Flower into this environment "
            f"(pip install 'flwr[simulation]') or run with the venv's python"
        )
    return path


def free_ports(count: int = 1, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports that are free on ``host`` right now.

    All sockets stay bound until every port is picked, so the ports differ.
    Another process may still take one before it is used (rare on loopback).
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def flower_env(
    flwr_home: str | os.PathLike[str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Environment for Flower processes that keeps them to ``flwr_home``.

    Sets ``FLWR_HOME`` (config, installed apps, the local SuperLink's
    database), puts the interpreter's ``bin`` first on ``PATH`` (the SuperLink
    and SuperNodes spawn ``flower-superexec``, ``flwr-serverapp`` ... by
    name), disables runtime dependency installation (offline machines; the
    app is already installed), the update check and telemetry. ``extra``
    entries win.
    """
    env = dict(os.environ)
    env.update(
        {
            "FLWR_HOME": str(flwr_home),
            "PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
            "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
            "FLWR_DISABLE_UPDATE_CHECK": "1",
            "FLWR_TELEMETRY_ENABLED": "0",
        }
    )
    env.update(extra or {})
    return env


def local_superlink_env(flwr_home: str | os.PathLike[str]) -> dict[str, str]:
    """:func:`flower_env` plus free ports for the SuperLink that ``flwr run`` starts.

    ``flwr run`` reuses *any* healthy SuperLink on its fixed port (39091), even
    one started by another user or test with another ``FLWR_HOME``; free ports
    make each ``FLWR_HOME`` get its own.
    """
    http, control = free_ports(2)
    return flower_env(
        flwr_home,
        {
            "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": str(http),
            "FLWR_LOCAL_CONTROL_API_PORT": str(control),
        },
    )


def start_group(
    cmd: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    log: IO[bytes] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` as the leader of a new process group (and session).

    Its children (SuperExec, ClientApp processes ...) join the group, so
    :func:`stop_group` stops them all. Output goes to ``log`` (default: this
    process's stdout/stderr).
    """
    return subprocess.Popen(
        list(cmd),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
        start_new_session=True,
    )


def stop_group(proc: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """SIGTERM ``proc``'s process group, SIGKILL it after ``grace`` seconds.

    Safe to call on a process that already exited (its group may still hold
    children).
    """
    stop_groups([proc], grace)


def stop_groups(procs: Sequence[subprocess.Popen[Any]], grace: float = 5.0) -> None:
    """:func:`stop_group` for several groups at once (one grace period in all)."""
    members: set[int] = set()
    for proc in procs:
        members.update(_group_members(proc.pid))
        if proc.poll() is None:
            members.add(proc.pid)
    stop_pids(sorted(members | descendants(members)), grace)
    for proc in procs:
        # Reap; SIGKILL has been sent already. A timeout only if it ignored even SIGKILL (D state).
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)


def _program(proc: subprocess.Popen[Any]) -> str:
    """The program ``proc`` was started as (its first argument), for messages."""
    args = proc.args
    if isinstance(args, str | bytes | os.PathLike):
        return os.fsdecode(args)
    return os.fsdecode(args[0])


def _group_members(pgid: int) -> list[int]:
    out = []
    for pid, stat in _proc_stats().items():
        if stat[2] == pgid:
            out.append(pid)
    return out


def _proc_stats() -> dict[int, tuple[str, int, int]]:
    """{pid: (state, ppid, pgid)} of every live process (empty off Linux)."""
    return {pid: (f[0], int(f[1]), int(f[2])) for pid, f in _stat_fields().items()}


def _stat_fields() -> dict[int, list[str]]:
    """{pid: fields 3.. of /proc/<pid>/stat} of every live process (empty off Linux)."""
    stats: dict[int, list[str]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return stats
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:  # exited while scanning
            continue
        # The command name (field 2) may contain spaces/parens: split after the last ')'.
        stats[int(entry.name)] = raw[raw.rfind(")") + 2 :].split()
    return stats


def rss_by_group(pgids: Iterable[int]) -> dict[int, int]:
    """Resident memory in bytes of each process group of ``pgids``, its members summed.

    A SuperNode started by :func:`start_group` leads its own group, which holds the ClientApp
    processes it spawns, so this is a node's whole footprint. Empty groups give 0.
    """
    wanted = {int(g): 0 for g in pgids}
    page = os.sysconf("SC_PAGE_SIZE")
    for fields in _stat_fields().values():
        group = int(fields[2])
        if group in wanted:
            wanted[group] += int(fields[21]) * page  # field 24: rss in pages
    return wanted


def pids_matching(text: str, whole_args: bool = False) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (not this one).

    With ``whole_args`` the match must start and end at argument boundaries
    (``"--parent-pid 12"`` then does not match ``--parent-pid 123``).
    """
    wanted = f" {text} ".encode() if whole_args else text.encode()
    found = []
    for pid in _proc_stats():
        if pid == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if wanted in (b" " + cmdline + b" " if whole_args else cmdline):
            found.append(pid)
    return sorted(found)


def pids_with_env(key: str, value: str) -> list[int]:
    """Pids of live processes (readable by this user) started with ``key=value``.

    Children inherit the environment, so this finds every process a launcher
    started with, e.g., ``FLWR_HOME=<dir>`` even when their command lines do
    not name it.
    """
    wanted = f"{key}={value}".encode()
    found = []
    for pid in _proc_stats():
        if pid == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:  # exited, or another user's
            continue
        if wanted in environ:
            found.append(pid)
    return sorted(found)


def descendants(pids: Iterable[int]) -> set[int]:
    """All live descendants (children, grandchildren ...) of ``pids``."""
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in _proc_stats().items():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    todo = list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def alive(pids: Iterable[int]) -> list[int]:
    """Those of ``pids`` still running (zombies count as gone: nothing to stop)."""
    pids = list(pids)
    if Path("/proc").is_dir():
        stats = _proc_stats()
        return [p for p in pids if p in stats and stats[p][0] != "Z"]
    out = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            out.append(pid)
        except ProcessLookupError:
            pass
        except PermissionError:  # exists, owned by someone else
            out.append(pid)
    return out


def stop_pids(pids: Sequence[int], grace: float = 5.0) -> list[int]:
    """SIGTERM ``pids``, SIGKILL those alive after ``grace`` s; return survivors."""
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and alive(pids):
        time.sleep(_POLL)
    _signal_all(alive(pids), signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and alive(pids):
        time.sleep(_POLL)
    return alive(pids)


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def local_superlink_pids(flwr_home: str | os.PathLike[str]) -> list[int]:
    """Processes of the SuperLink ``flwr run`` started for ``flwr_home``.

    The SuperLink's command line names ``<flwr_home>/local-superlink/state.db``
    and its environment holds ``FLWR_HOME=<flwr_home>`` (inherited by what it
    starts); its ``flower-superexec`` runs in its own session and names
    ``--parent-pid <superlink pid>``; the ServerApp and simulation processes
    are their descendants. All of these are returned.
    """
    roots = set(pids_matching(str(Path(flwr_home)))) | set(
        pids_with_env("FLWR_HOME", str(flwr_home))
    )
    for pid in list(roots):
        roots.update(pids_matching(f"--parent-pid {pid}", whole_args=True))
    return sorted(roots | descendants(roots))


def stop_local_superlink(flwr_home: str | os.PathLike[str], grace: float = 5.0) -> list[int]:
    """Stop every process of the local SuperLink of ``flwr_home``.

    Returns
    -------
    list of int
        Pids that were found (and stopped).

    Raises
    ------
    RuntimeError
        If some survive SIGKILL (they are named in the message).
    """
    pids = local_superlink_pids(flwr_home)
    survivors = stop_pids(pids, grace)
    if survivors:
        raise RuntimeError(
            f"processes {survivors} of the SuperLink in {flwr_home} survived SIGKILL"
        )
    return pids


def wait_http_ok(
    url: str,
    timeout: float = 30.0,
    proc: subprocess.Popen[Any] | None = None,
    context: ssl.SSLContext | None = None,
) -> None:
    """Wait until ``GET url`` answers 2xx (e.g. a SuperLink's ``/health``).

    ``context`` verifies an ``https`` URL (e.g. one trusting a private CA;
    default None: the system's trust store).

    Raises
    ------
    RuntimeError
        If ``proc`` exits first.
    TimeoutError
        If ``url`` does not answer within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(
                f"{_program(proc)} exited with code {proc.returncode} before {url} answered"
            )
        try:
            with urllib.request.urlopen(url, timeout=1.0, context=context) as resp:  # noqa: S310
                if 200 <= resp.status < 300:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")
